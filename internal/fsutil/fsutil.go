// Package fsutil writes files durably. It is the one place that knows the sequence a file must go
// through to survive a crash whole or not at all: a temporary file, fsync, rename over the target,
// fsync of the directory. The journal's snapshots, the embedded demand store's snapshots, accepted
// import bodies and the files the binary writes in its data dir (credentials, the tools secret)
// all go through it.
package fsutil

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
)

// TempSuffix ends the name of the temporary file WriteFile writes before renaming it over its
// target: a directory whose owner lists it on start removes such leftovers of a crash.
const TempSuffix = ".tmp"

// SyncDir fsyncs a directory, so that a file created, renamed or removed in it is still there (or
// gone) after a crash.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open dir: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync dir: %w", err)
	}
	return nil
}

// WriteFile replaces path with what write writes, atomically and durably: write fills
// path+TempSuffix (created or truncated, mode perm), which is fsynced, renamed over path, and the
// directory is fsynced. A reader sees the old content or the new, never a part of it. On an error
// (write's included, returned wrapped) the temporary file is removed and path is unchanged.
func WriteFile(path string, perm os.FileMode, write func(io.Writer) error) error {
	tmp := path + TempSuffix
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return fmt.Errorf("create %s: %w", filepath.Base(tmp), err)
	}
	err = f.Chmod(perm) // a leftover temporary file keeps its mode through O_TRUNC
	if err == nil {
		err = write(f)
	}
	if err == nil {
		if err = f.Sync(); err != nil {
			err = fmt.Errorf("sync %s: %w", filepath.Base(tmp), err)
		}
	}
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("close %s: %w", filepath.Base(tmp), cerr)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("rename %s: %w", filepath.Base(tmp), err)
	}
	return SyncDir(filepath.Dir(path))
}

// WriteFileBytes is WriteFile writing data.
func WriteFileBytes(path string, data []byte, perm os.FileMode) error {
	return WriteFile(path, perm, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// DataSync flushes f's data and the metadata needed to read it back (its size), like fdatasync(2):
// unlike fsync it leaves the modification time to the file system's own schedule. Over a region
// already allocated (the journal's preallocated segments), it is a flush of the data alone, without
// a commit of the file system's journal: on ext4 about half the time and CPU of an fsync that
// extends the file.
func DataSync(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		for {
			if serr = syscall.Fdatasync(int(fd)); serr != syscall.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	if serr != nil {
		return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: serr}
	}
	return nil
}
