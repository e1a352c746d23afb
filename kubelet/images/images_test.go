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

// Every container gets mounts on /dev, /proc, /sys, /run and the pod's /etc/hostname,
// /etc/hosts and /etc/resolv.conf; the project's images ship those paths (so runc does not
// create them in each container's writable layer), each directory ahead of what lies in it
// and each path once.
func TestImagesShipMountPoints(t *testing.T) {
	wantDirs := []string{"dev", "etc", "proc", "run", "sys"}
	wantFiles := []string{"etc/hostname", "etc/hosts", "etc/resolv.conf"}
	for name, es := range map[string][]Entry{
		"busybox": BusyboxEntries([]byte("binary"), []string{"sh", "ls"}),
		"pause":   PauseEntries([]byte("binary")),
	} {
		at := map[string]int{}
		for i, e := range es {
			if _, dup := at[e.Path]; dup {
				t.Errorf("%s: %s listed twice", name, e.Path)
			}
			at[e.Path] = i
		}
		for _, d := range wantDirs {
			if i, ok := at[d]; !ok || !es[i].Dir {
				t.Errorf("%s: no directory %s", name, d)
			}
		}
		for _, f := range wantFiles {
			if i, ok := at[f]; !ok || es[i].Dir || es[i].Linkname != "" {
				t.Errorf("%s: no regular file %s", name, f)
			}
		}
		// A directory comes before every entry under it (tar readers create missing
		// parents with default modes otherwise).
		for i, e := range es {
			for dir := filepath.Dir(e.Path); dir != "."; dir = filepath.Dir(dir) {
				j, ok := at[dir]
				if !ok {
					t.Errorf("%s: %s has no entry for its directory %s", name, e.Path, dir)
				} else if j > i || !es[j].Dir {
					t.Errorf("%s: directory %s (entry %d) not before %s (entry %d)", name, dir, j, e.Path, i)
				}
			}
		}
	}
}
