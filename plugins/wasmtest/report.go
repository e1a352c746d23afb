package wasmtest

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"strings"
)

// Failed counts the results that did not pass.
func Failed(rs []Result) int {
	n := 0
	for _, r := range rs {
		if !r.Passed && !r.Skipped {
			n++
		}
	}
	return n
}

// WriteText prints one line per result, and the diff under each failure.
func WriteText(w io.Writer, rs []Result) {
	passed, skipped := 0, 0
	for _, r := range rs {
		word := "FAIL"
		switch {
		case r.Skipped:
			word = "SKIP"
			skipped++
		case r.Passed:
			word = "PASS"
			passed++
		}
		fmt.Fprintf(w, "%s  %s (%s)\n", word, r.Name, r.Duration.Round(10_000))
		for _, d := range r.Diff {
			fmt.Fprintf(w, "      %s\n", d)
		}
	}
	fmt.Fprintf(w, "%d passed, %d failed", passed, len(rs)-passed-skipped)
	if skipped > 0 {
		fmt.Fprintf(w, ", %d skipped", skipped)
	}
	fmt.Fprintln(w)
}

// WriteJSON prints the results as a JSON document: {"results": [...], "passed": n, "failed": n}.
func WriteJSON(w io.Writer, rs []Result) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		Results []Result `json:"results"`
		Passed  int      `json:"passed"`
		Failed  int      `json:"failed"`
	}{rs, len(rs) - Failed(rs), Failed(rs)})
}

// WriteJUnit writes the results to path as a JUnit XML report (one testsuite named
// suite), the format CI systems read.
func WriteJUnit(path, suite string, rs []Result) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := WriteJUnitTo(f, suite, rs); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// WriteJUnitTo writes the JUnit XML report of WriteJUnit to w.
func WriteJUnitTo(w io.Writer, suite string, rs []Result) error {
	type failure struct {
		Message string `xml:"message,attr"`
		Body    string `xml:",chardata"`
	}
	type testcase struct {
		Name    string    `xml:"name,attr"`
		Class   string    `xml:"classname,attr"`
		Time    float64   `xml:"time,attr"`
		Failure *failure  `xml:"failure,omitempty"`
		Skipped *struct{} `xml:"skipped,omitempty"`
	}
	type testsuite struct {
		XMLName  xml.Name   `xml:"testsuite"`
		Name     string     `xml:"name,attr"`
		Tests    int        `xml:"tests,attr"`
		Failures int        `xml:"failures,attr"`
		Skipped  int        `xml:"skipped,attr"`
		Cases    []testcase `xml:"testcase"`
	}
	skipped := 0
	for _, r := range rs {
		if r.Skipped {
			skipped++
		}
	}
	ts := testsuite{Name: suite, Tests: len(rs), Failures: Failed(rs), Skipped: skipped}
	for _, r := range rs {
		tc := testcase{Name: r.Name, Class: suite, Time: r.Duration.Seconds()}
		if r.Skipped {
			tc.Skipped = &struct{}{}
		} else if !r.Passed {
			msg := "failed"
			if len(r.Diff) > 0 {
				msg = r.Diff[0]
			}
			tc.Failure = &failure{Message: msg, Body: strings.Join(r.Diff, "\n")}
		}
		ts.Cases = append(ts.Cases, tc)
	}
	b, err := xml.MarshalIndent(ts, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append([]byte(xml.Header), append(b, '\n')...))
	return err
}
