package images

import (
	"archive/tar"
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestLayerTarIsDeterministic(t *testing.T) {
	es := BusyboxEntries([]byte("binary"), []string{"sh", "ls", "sh", "../evil", "busybox"})
	a, err := LayerTar(es)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := LayerTar(es)
	if !bytes.Equal(a, b) {
		t.Fatal("same entries gave different layers")
	}
	tr := tar.NewReader(bytes.NewReader(a))
	links := map[string]string{}
	for {
		h, err := tr.Next()
		if err != nil {
			break
		}
		if h.Typeflag == tar.TypeSymlink {
			links[h.Name] = h.Linkname
		}
	}
	if want := map[string]string{"bin/ls": "busybox", "bin/sh": "busybox"}; !reflect.DeepEqual(links, want) {
		t.Errorf("applet links %v, want %v (no duplicates, no path escapes)", links, want)
	}
}

func TestArchiveRefs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.tar")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := BuildArchive(f, PauseRef, []Entry{{Path: "pause", Mode: 0o755, Data: []byte("x")}}, []string{"/pause"}, nil); err != nil {
		t.Fatal(err)
	}
	f.Close()
	refs, err := ArchiveRefs(path)
	if err != nil || !reflect.DeepEqual(refs, []string{PauseRef}) {
		t.Fatalf("refs %v %v", refs, err)
	}
	if _, err := ArchiveRefs(os.Args[0]); err == nil {
		t.Fatal("a non-archive was accepted")
	}
}
