package storage

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// A full disk (docs/storage.md, "A full disk"). The embedded etcd exits the process when
// a write to its WAL or database fails (it treats the error as fatal, by design), so the
// server must refuse writes before the disk is full rather than find out at the wall:
//
//   - the free space of the data dir's filesystem is checked before every write; below
//     Config.MinFreeBytes creates and updates are refused with ErrNoSpace (507), and
//     below reserveReleaseAt deletes too;
//   - a reserve file (DataDir/etcd-space-reserve, ReserveBytes) holds back room that is
//     released when the free space falls below reserveReleaseAt (at start too), so etcd's
//     own writes (the next WAL segment, lease expiry, compaction, the start on a full
//     disk) find room; it is put back when the space returns;
//   - etcd's backend quota (Config.QuotaBackendBytes) raises its NOSPACE alarm before
//     the database outgrows the disk; puts are then refused by etcd (ErrNoSpace, 507),
//     and the monitor compacts, defragments and disarms the alarm as soon as the data
//     fits again.
//
// Reads and watches never need space, and are served throughout.

// ErrNoSpace is returned for a write refused for lack of space: the data dir's disk is
// (nearly) full, or etcd's backend quota is reached (its NOSPACE alarm). The API server
// maps it to 507 Insufficient Storage. Nothing was written.
var ErrNoSpace = errors.New("storage: no space for writes")

// Defaults of the space settings.
const (
	// walSegmentBytes is etcd's WAL segment size (wal.SegmentSizeBytes): each segment is
	// preallocated whole, and the next one is preallocated ahead of need.
	walSegmentBytes = 64 << 20
	// DefaultMinFreeBytes: room for the next preallocated WAL segment and the database's
	// growth while the writes in flight land.
	DefaultMinFreeBytes = walSegmentBytes + 32<<20
	// DefaultReserveBytes is the size of the reserve file: one WAL segment, which etcd
	// preallocates as it starts, and room for what it writes before.
	DefaultReserveBytes = walSegmentBytes + 32<<20
	// DefaultQuotaBackendBytes is etcd's default backend quota (2 GiB); NewBackend lowers
	// it to half of the data dir's filesystem when that is smaller.
	DefaultQuotaBackendBytes = 2 << 30
	// spaceCheckInterval between the monitor's checks of the disk and the alarm.
	spaceCheckInterval = 250 * time.Millisecond
	reserveFileName    = "etcd-space-reserve"
)

// diskSpace is what statfs says about a filesystem.
type diskSpace struct{ free, total int64 }

func statDisk(dir string) (diskSpace, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return diskSpace{}, fmt.Errorf("statfs %s: %w", dir, err)
	}
	return diskSpace{free: int64(st.Bavail) * int64(st.Bsize), total: int64(st.Blocks) * int64(st.Bsize)}, nil
}

// spacePlan is what the free space means for writes and for the reserve file.
type spacePlan struct {
	refuseWrites   bool // creates and updates
	refuseDeletes  bool
	releaseReserve bool // delete the reserve file now
	restoreReserve bool // create it again
}

// planSpace decides from the free space (pure). The reserve is released below
// releaseAt, and restored only when it fits with minFree to spare, so it does not flap.
// While it is released its room is etcd's, not the writes': they need minFree beyond it.
func planSpace(free, minFree, releaseAt, reserve int64, haveReserve bool) spacePlan {
	forWrites := free
	if !haveReserve {
		forWrites -= reserve
	}
	p := spacePlan{refuseWrites: forWrites < minFree, refuseDeletes: free < releaseAt}
	switch {
	case haveReserve && free < releaseAt:
		p.releaseReserve = true
	case !haveReserve && reserve > 0 && free >= minFree+reserve+releaseAt:
		p.restoreReserve = true
	}
	return p
}

// spaceGuard refuses writes when there is no room, and keeps the reserve file.
type spaceGuard struct {
	dir       string // the embedded etcd's data dir; "" for an external cluster
	minFree   int64
	releaseAt int64
	reserve   int64
	quota     int64

	fatal       *atomic.Pointer[string] // the embedded etcd's fatal error, if it had one
	selfRestart bool                    // Config.RestartProcess is set: the message says so

	mu     sync.Mutex
	alarm  bool  // etcd's NOSPACE alarm is (believed) raised
	lastFS int64 // the last free space seen, for messages
}

// newSpaceGuard sets up the checks for the embedded etcd in dir, with the quota lowered
// to half of the filesystem when that is below cfg's.
func newSpaceGuard(cfg Config, dir string) *spaceGuard {
	g := &spaceGuard{dir: dir, minFree: cfg.MinFreeBytes, reserve: max(cfg.ReserveBytes, 0), quota: cfg.QuotaBackendBytes}
	if g.minFree < 0 {
		g.minFree = 0
	}
	if d, err := statDisk(filepath.Dir(dir)); err == nil {
		// On a small disk the defaults would leave no room for data: keep at most an
		// eighth of it free and a quarter as reserve (a disk under about 400 MiB then
		// has less than a WAL segment in reserve: docs/storage.md says what that costs).
		if cfg.MinFreeBytes == DefaultMinFreeBytes {
			g.minFree = min(g.minFree, d.total/8)
		}
		if cfg.ReserveBytes == DefaultReserveBytes {
			g.reserve = min(g.reserve, d.total/4)
		}
		if g.quota <= 0 {
			g.quota = min(DefaultQuotaBackendBytes, d.total/2)
		}
	}
	if g.quota <= 0 {
		g.quota = DefaultQuotaBackendBytes
	}
	g.releaseAt = g.minFree / 3
	return g
}

func (g *spaceGuard) reservePath() string { return filepath.Join(filepath.Dir(g.dir), reserveFileName) }

func (g *spaceGuard) haveReserve() bool {
	_, err := os.Stat(g.reservePath())
	return err == nil
}

// check returns ErrNoSpace, with the cause, when a write of this kind must be refused
// now. It costs one statfs.
func (g *spaceGuard) check(op, key string, isDelete bool) error {
	if g.fatal != nil {
		if m := g.fatal.Load(); m != nil && strings.HasPrefix(*m, walPreallocFailed) {
			return fmt.Errorf("%w: %s %s: etcd could not preallocate its next %d-byte WAL segment on the disk of %s (%s): writes resume on their own once the disk has room for it (the server restarts etcd then)", ErrNoSpace, op, key, walSegmentBytes, g.dir, *m)
		} else if m != nil && g.selfRestart {
			return fmt.Errorf("%w: %s %s: the embedded etcd cannot write any more (%s); reads are served from the watch caches; the server restarts itself once the disk of %s has %d bytes free", ErrUnavailable, op, key, *m, g.dir, g.minFree+walSegmentBytes)
		} else if m != nil {
			return fmt.Errorf("%w: %s %s: the embedded etcd cannot write any more (%s); reads are served from the watch caches; free disk space if that was the cause and restart the server", ErrUnavailable, op, key, *m)
		}
	}
	g.mu.Lock()
	alarm := g.alarm
	g.mu.Unlock()
	if alarm && !isDelete {
		return fmt.Errorf("%w: %s %s: etcd's backend quota of %d bytes is reached (NOSPACE alarm): writes are refused until objects are deleted and etcd is compacted; the server does that and clears the alarm on its own", ErrNoSpace, op, key, g.quota)
	}
	if g.dir == "" {
		return nil
	}
	d, err := statDisk(g.dir)
	if err != nil {
		return nil // cannot tell: let etcd decide
	}
	g.mu.Lock()
	g.lastFS = d.free
	g.mu.Unlock()
	have := g.haveReserve()
	p := planSpace(d.free, g.minFree, g.releaseAt, g.reserve, have)
	if p.releaseReserve {
		// At once, not at the monitor's next look: etcd's own writes need the room now.
		if err := os.Remove(g.reservePath()); err == nil {
			have = false
		}
	}
	if p.refuseWrites && !isDelete || p.refuseDeletes {
		keep := g.minFree
		if !have {
			keep += g.reserve
		}
		return fmt.Errorf("%w: %s %s: the disk of %s has %d bytes free, below the %d the server keeps for etcd: free space there; writes resume on their own", ErrNoSpace, op, key, g.dir, d.free, keep)
	}
	return nil
}

// keepReserve releases or restores the reserve file as planSpace says.
func (g *spaceGuard) keepReserve(log interface{ Warn(string, ...any) }) {
	if g.dir == "" || g.reserve <= 0 {
		return
	}
	d, err := statDisk(g.dir)
	if err != nil {
		return
	}
	p := planSpace(d.free, g.minFree, g.releaseAt, g.reserve, g.haveReserve())
	switch {
	case p.releaseReserve:
		if err := os.Remove(g.reservePath()); err == nil {
			log.Warn("the data dir's disk is nearly full: released the space reserve for etcd; writes are refused until space is freed",
				"free", d.free, "reserve", g.reserve, "path", g.reservePath())
		}
	case p.restoreReserve:
		if err := writeReserve(g.reservePath(), g.reserve); err != nil {
			log.Warn("could not restore the space reserve", "err", err)
		}
	}
}

// writeReserve creates the reserve file with its blocks allocated (fallocate, so a
// sparse file does not pretend to hold room).
func writeReserve(path string, size int64) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	err = syscall.Fallocate(int(f.Fd()), 0, 0, size)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("allocate %d bytes for %s: %w", size, path, err)
	}
	return os.Rename(tmp, path)
}

// runSpaceMonitor keeps the reserve file and clears etcd's NOSPACE alarm once the data
// fits under the quota again.
func (b *Backend) runSpaceMonitor(ctx context.Context) {
	t := time.NewTicker(spaceCheckInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		b.space.keepReserve(b.log)
		b.restartAfterPreallocFailure(ctx)
		b.restartAfterFatal()
		if err := b.recoverFromAlarm(ctx); err != nil && ctx.Err() == nil {
			b.log.Debug("NOSPACE alarm not cleared yet", "err", err)
		}
	}
}

// recoverFromAlarm looks for etcd's NOSPACE alarm and, when the live data fits under
// the quota again, compacts the history, defragments (which returns the freed pages to
// the filesystem) and disarms it, as etcd's documentation prescribes.
func (b *Backend) recoverFromAlarm(ctx context.Context) error {
	actx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := b.client.AlarmList(actx)
	if err != nil {
		return err
	}
	var alarms []*etcdserverpb.AlarmMember
	for _, a := range resp.Alarms {
		if a.Alarm == etcdserverpb.AlarmType_NOSPACE {
			alarms = append(alarms, a)
		}
	}
	b.space.mu.Lock()
	b.space.alarm = len(alarms) > 0
	b.space.mu.Unlock()
	b.etcdMu.Lock()
	embedded := b.etcd != nil
	b.etcdMu.Unlock()
	if len(alarms) == 0 || !embedded {
		return nil // an external cluster's alarm is its operators' to clear
	}
	// Compact everything up to now: a resource's history is given up for the writes
	// (watchers behind it get 410 and relist).
	cur, err := b.client.Get(actx, compactRevKey, clientv3.WithCountOnly())
	if err != nil {
		return err
	}
	if _, err := b.client.Compact(actx, cur.Header.Revision, clientv3.WithCompactPhysical()); err != nil && !errors.Is(err, rpctypes.ErrCompacted) {
		return fmt.Errorf("compact: %w", err)
	}
	b.mu.Lock()
	for _, c := range b.cachers {
		c.compacted(cur.Header.Revision)
	}
	b.mu.Unlock()
	for _, ep := range b.client.Endpoints() {
		st, err := b.client.Status(actx, ep)
		if err != nil {
			return err
		}
		if st.DbSizeInUse >= b.space.quota*9/10 {
			return fmt.Errorf("the live data (%d bytes) still does not fit under the quota (%d): delete objects", st.DbSizeInUse, b.space.quota)
		}
		dctx, dcancel := context.WithTimeout(ctx, time.Minute)
		_, err = b.client.Defragment(dctx, ep)
		dcancel()
		if err != nil {
			return fmt.Errorf("defragment %s: %w", ep, err)
		}
	}
	for _, a := range alarms {
		if _, err := b.client.AlarmDisarm(actx, (*clientv3.AlarmMember)(a)); err != nil {
			return fmt.Errorf("disarm: %w", err)
		}
	}
	b.space.mu.Lock()
	b.space.alarm = false
	b.space.mu.Unlock()
	b.log.Warn("etcd's NOSPACE alarm cleared after compaction and defragmentation: writes resume")
	return nil
}

// restartAfterPreallocFailure restarts the embedded etcd, on the same client address, once
// the disk has room again after etcd failed to preallocate its next WAL segment: etcd
// does not try that again by itself and would stop at its next segment, so writes were
// refused (etcdlog.go); a restart preallocates anew. etcd is stopped gracefully, so
// everything it acknowledged stays; the client reconnects and the watch caches resume
// from their last revision. A fatal error of another kind is not retried.
// restartAfterFatal asks the command to restart the process (Config.RestartProcess) once
// the embedded etcd has failed a write for good and its disk has room again: room for
// MinFreeBytes and a WAL segment, which etcd preallocates as it starts.
func (b *Backend) restartAfterFatal() {
	m := b.etcdFatal.Load()
	if m == nil || strings.HasPrefix(*m, walPreallocFailed) || b.cfg.RestartProcess == nil || b.space.dir == "" {
		return
	}
	d, err := statDisk(b.space.dir)
	if err != nil || d.free < b.space.minFree+walSegmentBytes || !b.restartAsked.CompareAndSwap(false, true) {
		return
	}
	b.log.Warn("the embedded etcd failed a write and its disk has room again: restarting the server process", "free", d.free, "etcd", *m)
	b.cfg.RestartProcess(*m)
}

func (b *Backend) restartAfterPreallocFailure(ctx context.Context) {
	m := b.etcdFatal.Load()
	if m == nil || !strings.HasPrefix(*m, walPreallocFailed) || b.space.dir == "" {
		return
	}
	d, err := statDisk(b.space.dir)
	if err != nil || d.free < b.space.minFree+walSegmentBytes {
		return
	}
	b.etcdMu.Lock()
	defer b.etcdMu.Unlock()
	if b.etcd == nil || len(b.etcd.Clients) == 0 {
		return
	}
	addr := b.etcd.Clients[0].Addr().String()
	b.log.Warn("restarting the embedded etcd now that its disk has room: it could not preallocate its next WAL segment", "free", d.free)
	b.closing.Store(true)
	b.etcd.Close()
	b.closing.Store(false)
	b.etcdFatal.Store(nil)
	e, err := startEmbedded(ctx, b.space.dir, addr, b.space.quota, b.cfg.Logger, &b.closing, &b.etcdFatal)
	if err != nil {
		msg := "restart after a failed WAL preallocation: " + err.Error()
		b.etcdFatal.Store(&msg)
		b.etcd = nil
		b.log.Error("the embedded etcd did not start again; restart the server", "err", err)
		return
	}
	b.etcd = e
	b.log.Warn("the embedded etcd runs again: writes resume")
}
