package job

import (
	"sort"
	"strconv"
	"strings"
)

// Indexes is a set of completion indexes, kept sorted. Its string form is upstream's
// status.completedIndexes: ranges and single indexes separated by commas ("0-2,5,7-8").
type Indexes []int

// ParseIndexes reads the string form; entries outside [0, completions) or that do not
// parse are dropped, as upstream does with a corrupt status.
func ParseIndexes(s string, completions int) Indexes {
	var out Indexes
	if s == "" {
		return out
	}
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			continue
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil {
				continue
			}
		}
		for i := max(a, 0); i <= b && i < completions; i++ {
			out = append(out, i)
		}
	}
	sort.Ints(out)
	return out.dedup()
}

func (x Indexes) dedup() Indexes {
	var out Indexes
	for i, v := range x {
		if i == 0 || v != x[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// Has reports whether i is in the set.
func (x Indexes) Has(i int) bool {
	k := sort.SearchInts(x, i)
	return k < len(x) && x[k] == i
}

// With returns the set with i added.
func (x Indexes) With(i int) Indexes {
	if x.Has(i) {
		return x
	}
	out := append(append(Indexes(nil), x...), i)
	sort.Ints(out)
	return out
}

// String is the compressed form: "0-2,5".
func (x Indexes) String() string {
	var b strings.Builder
	for i := 0; i < len(x); {
		j := i
		for j+1 < len(x) && x[j+1] == x[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(x[i]))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(x[j]))
		}
		i = j + 1
	}
	return b.String()
}
