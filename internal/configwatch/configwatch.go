// Package configwatch reloads a component's section of the wasmkube config file while it
// runs: the scheduler's profiles, the API server's admission policies and the kubelet's
// hook plugins all swap this way. It watches the folders of the config file and of the
// modules the config in force declares (editors and ConfigMap mounts replace files by
// rename, which a watch on the file itself would lose) and calls Reload, debounced, when
// the file's bytes changed or a declared module was rewritten.
//
// Reloads are generation-ordered: every change the watch sees starts a new generation,
// and a Snapshot knows whether a newer one exists (Superseded). A component checks it
// before it puts a built set in force and discards a superseded set instead (returning
// ErrSuperseded), so a set that the file no longer says is never applied. Reload runs on a
// goroutine of its own: the watch keeps reading events while a reload builds, and once it
// returns, the next reload reads the file as it is then, so a burst of writes costs at
// most one reload in progress plus one of the latest content, never one per write.
package configwatch

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
)

// DefaultDebounce is how long a burst of file events is let settle before a reload. It is
// short because a reload that a later write supersedes is abandoned, not applied: the
// debounce only saves work, it no longer keeps a half-written state out of force.
const DefaultDebounce = 50 * time.Millisecond

// ErrSuperseded is what Reload returns when it discarded its snapshot because a newer one
// exists; it is not a failure, and the newer snapshot is reloaded next.
var ErrSuperseded = errors.New("config reload superseded by a newer change")

// Snapshot is one version of the config file, read after the change of generation Gen.
type Snapshot struct {
	// Data is the file's content.
	Data []byte
	// Gen numbers the changes seen; a larger one is newer.
	Gen uint64

	latest *atomic.Uint64
	hook   func(Snapshot)
}

// Static is a snapshot that nothing supersedes: a component's own first load, a test's
// direct reload.
func Static(data []byte) Snapshot { return Snapshot{Data: data} }

// Superseded reports whether a newer change than the snapshot's was seen since it was
// read: a reload that finds it true must not put its result in force.
func (s Snapshot) Superseded() bool { return s.latest != nil && s.latest.Load() != s.Gen }

// Building is called by a component between the steps of a reload (after each module
// it loads): it runs the test hook that slows reloads, if any.
func (s Snapshot) Building() {
	if s.hook != nil {
		s.hook(s)
	}
}

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
	// Reload puts the snapshot in force unless it is superseded; on an error the config
	// in force stays (Reload reports why) and the watch goes on. ErrSuperseded: a newer
	// snapshot follows.
	Reload func(Snapshot) error
	// Debounce defaults to DefaultDebounce.
	Debounce time.Duration
	// Log defaults to slog.Default().
	Log *slog.Logger
	// BuildHook, when set, runs at each Snapshot.Building call: tests slow reloads with it.
	BuildHook func(Snapshot)
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
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		o.Log.Error("config watch: the config is not reloaded on change", "component", o.What, "err", err)
		return
	}
	defer fw.Close()
	w := &watcher{o: o, fw: fw, file: file, base: base, watched: map[string]bool{}, kick: make(chan struct{}, 1)}
	w.watch(base)
	w.refreshModules()

	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		w.reloader(ctx)
	}()
	defer wg.Wait()

	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-fw.Events:
			if !ok {
				return
			}
			name := filepath.Clean(ev.Name)
			switch {
			case name == file || filepath.Base(name) == "..data": // ..data: a ConfigMap mount's swap
			case w.isModule(name):
				w.moduleChanged.Store(true)
			default:
				continue
			}
			// A new generation now, not when the debounce ends: a reload in progress
			// learns at once that its snapshot is no longer the latest.
			w.gen.Add(1)
			timer.Reset(o.Debounce)
		case err, ok := <-fw.Errors:
			if !ok {
				return
			}
			// An overflow of the kernel's event queue loses events: read the file anyway.
			o.Log.Warn("config watch", "component", o.What, "err", err)
			w.moduleChanged.Store(true)
			w.gen.Add(1)
			timer.Reset(o.Debounce)
		case <-timer.C:
			w.wake()
		}
	}
}

type watcher struct {
	o          Options
	fw         *fsnotify.Watcher
	file, base string

	mu      sync.Mutex
	watched map[string]bool
	mods    map[string]bool

	gen           atomic.Uint64
	moduleChanged atomic.Bool
	kick          chan struct{}
}

func (w *watcher) wake() {
	select {
	case w.kick <- struct{}{}:
	default: // a reload is already due; it reads the latest content
	}
}

func (w *watcher) watch(dir string) {
	if w.watched[dir] {
		return
	}
	if err := w.fw.Add(dir); err != nil {
		w.o.Log.Warn("config watch", "component", w.o.What, "dir", dir, "err", err)
		return
	}
	w.watched[dir] = true
}

// refreshModules watches the folders of the modules the config in force declares.
func (w *watcher) refreshModules() {
	m := map[string]bool{}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range w.o.Modules() {
		if !filepath.IsAbs(p) {
			p = filepath.Join(w.base, p)
		}
		p = filepath.Clean(p)
		m[p] = true
		w.watch(filepath.Dir(p))
	}
	w.mods = m
}

func (w *watcher) isModule(name string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.mods[name]
}

// reloader runs the reloads, one at a time, each of the file's content when it starts.
func (w *watcher) reloader(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.kick:
		}
		gen := w.gen.Load()
		data, err := os.ReadFile(w.file)
		if err != nil {
			w.o.Log.Warn("config file unreadable; the config in force stays", "component", w.o.What, "err", err)
			continue
		}
		modChanged := w.moduleChanged.Swap(false)
		if !modChanged && w.o.Unchanged(data) {
			continue
		}
		snap := Snapshot{Data: data, Gen: gen, latest: &w.gen, hook: w.o.BuildHook}
		err = w.o.Reload(snap)
		switch {
		case errors.Is(err, ErrSuperseded):
			if modChanged {
				w.moduleChanged.Store(true) // the module change was not applied
			}
			w.wake()
		case err == nil:
			w.refreshModules()
		}
		// The file may have changed without an event reaching us (a lost or coalesced
		// event): a reload always ends on the file's latest content.
		if now, err := os.ReadFile(w.file); err == nil && !bytes.Equal(now, data) {
			w.gen.Add(1)
			w.wake()
		}
	}
}

type snapshotKey struct{}

// NewContext returns ctx carrying snap, for a component whose reload API takes a context
// (the kubelet's hook plugins): its loader checks FromContext(ctx).Superseded().
func NewContext(ctx context.Context, snap Snapshot) context.Context {
	return context.WithValue(ctx, snapshotKey{}, snap)
}

// FromContext returns the snapshot ctx carries, or a Static one that nothing supersedes.
func FromContext(ctx context.Context) Snapshot {
	if s, ok := ctx.Value(snapshotKey{}).(Snapshot); ok {
		return s
	}
	return Snapshot{}
}
