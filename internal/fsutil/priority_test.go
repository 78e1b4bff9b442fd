package fsutil

import (
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
)

// TestDataSyncRestoresPriority: DataSync raises its thread's priority for the flush (when it may)
// and leaves the thread as it found it.
func TestDataSyncRestoresPriority(t *testing.T) {
	runtime.LockOSThread() // DataSync's lock nests: the thread read before and after is the one it ran on
	defer runtime.UnlockOSThread()
	tid := syscall.Gettid()
	before, err := syscall.Getpriority(syscall.PRIO_PROCESS, tid)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for range 3 {
		if _, err := f.Write([]byte("x")); err != nil {
			t.Fatal(err)
		}
		if err := DataSync(f); err != nil {
			t.Fatal(err)
		}
		if after, err := syscall.Getpriority(syscall.PRIO_PROCESS, tid); err != nil || after != before {
			t.Fatalf("thread priority %d after DataSync (%v), want %d", after, err, before)
		}
	}
	if p, ok := raisePriority(); ok {
		if now, _ := syscall.Getpriority(syscall.PRIO_PROCESS, tid); 20-now != syncNice {
			t.Errorf("raised to nice %d, want %d", 20-now, syncNice)
		}
		restorePriority(p)
	} else {
		t.Log("this process may not raise a thread's priority (no CAP_SYS_NICE): DataSync leaves it")
	}
}
