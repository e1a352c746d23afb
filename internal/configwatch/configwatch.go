// Package configwatch reloads a component's section of the wasmkube config file while it
// runs: the scheduler's profiles, the API server's admission policies and the kubelet's
// hook plugins all swap this way. It watches the folders of the config file and of the
// modules the config in force declares (editors and ConfigMap mounts replace files by
// rename, which a watch on the file itself would lose) and calls Reload, debounced, when
// the file's bytes changed or a declared module was rewritten.
package configwatch

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
)

// DefaultDebounce is how long a burst of file events is let settle before a reload.
const DefaultDebounce = 250 * time.Millisecond

// Options say what to watch and what to do.
type Options struct {
	// What names the component in log lines: "scheduler", "admission", "kubelet".
	What string
	// File is the config file.
	File string
	// Modules returns the module files the config in force declares (relative paths are
	// taken from the config file's folder).
	Modules func() []string
	// Unchanged reports whether data is what is in force: a write that changed nothing
	// (and no module changed) causes no reload.
	Unchanged func(data []byte) bool
	// Reload puts data in force; on an error the config in force stays (Reload reports
	// why) and the watch goes on.
	Reload func(data []byte) error
	// Debounce defaults to DefaultDebounce.
	Debounce time.Duration
	// Log defaults to slog.Default().
	Log *slog.Logger
}

// Run watches until ctx ends.
func Run(ctx context.Context, o Options) {
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.Debounce <= 0 {
		o.Debounce = DefaultDebounce
	}
	file := filepath.Clean(o.File)
	base := filepath.Dir(file)
	w, err := fsnotify.NewWatcher()
	if err != nil {
		o.Log.Error("config watch: the config is not reloaded on change", "component", o.What, "err", err)
		return
	}
	defer w.Close()
	watched := map[string]bool{}
	watch := func(dir string) {
		if watched[dir] {
			return
		}
		if err := w.Add(dir); err != nil {
			o.Log.Warn("config watch", "component", o.What, "dir", dir, "err", err)
			return
		}
		watched[dir] = true
	}
	watch(base)
	modules := func() map[string]bool {
		m := map[string]bool{}
		for _, p := range o.Modules() {
			if !filepath.IsAbs(p) {
				p = filepath.Join(base, p)
			}
			p = filepath.Clean(p)
			m[p] = true
			watch(filepath.Dir(p))
		}
		return m
	}
	mods := modules()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	moduleChanged := false
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.Events:
			if !ok {
				return
			}
			name := filepath.Clean(ev.Name)
			switch {
			case name == file || filepath.Base(name) == "..data": // ..data: a ConfigMap mount's swap
				timer.Reset(o.Debounce)
			case mods[name]:
				moduleChanged = true
				timer.Reset(o.Debounce)
			}
		case err, ok := <-w.Errors:
			if !ok {
				return
			}
			o.Log.Warn("config watch", "component", o.What, "err", err)
		case <-timer.C:
			data, err := os.ReadFile(file)
			if err != nil {
				o.Log.Warn("config file unreadable; the config in force stays", "component", o.What, "err", err)
				continue
			}
			if !moduleChanged && o.Unchanged(data) {
				continue
			}
			moduleChanged = false
			if o.Reload(data) == nil {
				mods = modules()
			}
		}
	}
}
