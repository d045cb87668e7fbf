package capability

import (
	"io/fs"
	"os"
	"slices"
	"strings"
	"syscall"
	"unsafe"
)

// A dirLister lists directories with open, getdents64 and close alone,
// into one buffer used again for every directory: an *os.File costs more
// than the listing here (on Linux os.ReadDir sets the descriptor
// non-blocking, tries to add it to the poller and sets it back, and
// allocates the File, its finalizer and a record per entry). It gives
// what os.ReadDir gives: the entries sorted by name, without "." and
// "..", typed from the listing, Info an lstat of the entry. Whenever the
// listing is not plain (the open or a read fails, an entry's type is
// unknown to the file system) it returns os.ReadDir's answer instead.
// TestReadDirEqualsOS checks it.
type dirLister struct {
	buf []byte
}

func (l *dirLister) readDir(name string) ([]fs.DirEntry, error) {
	var fd int
	var err error
	for {
		fd, err = syscall.Open(name, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_DIRECTORY, 0)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return os.ReadDir(name)
	}
	defer syscall.Close(fd)
	if l.buf == nil {
		l.buf = make([]byte, 8192)
	}
	const (
		offReclen = unsafe.Offsetof(syscall.Dirent{}.Reclen)
		offType   = unsafe.Offsetof(syscall.Dirent{}.Type)
		offName   = unsafe.Offsetof(syscall.Dirent{}.Name)
	)
	var ents []fs.DirEntry
	for {
		n, err := syscall.ReadDirent(fd, l.buf)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return os.ReadDir(name)
		}
		if n <= 0 {
			break
		}
		for b := l.buf[:n]; len(b) > 0; {
			if len(b) < int(offName) {
				return os.ReadDir(name)
			}
			reclen := int(*(*uint16)(unsafe.Pointer(&b[offReclen])))
			if reclen < int(offName) || reclen > len(b) {
				return os.ReadDir(name)
			}
			rec := b[:reclen]
			b = b[reclen:]
			// Linux keeps entries with inode 0, as package os does.
			nm := rec[offName:]
			if i := slices.Index(nm, 0); i >= 0 {
				nm = nm[:i]
			}
			if string(nm) == "." || string(nm) == ".." {
				continue
			}
			var typ fs.FileMode
			switch rec[offType] {
			case syscall.DT_BLK:
				typ = fs.ModeDevice
			case syscall.DT_CHR:
				typ = fs.ModeDevice | fs.ModeCharDevice
			case syscall.DT_DIR:
				typ = fs.ModeDir
			case syscall.DT_FIFO:
				typ = fs.ModeNamedPipe
			case syscall.DT_LNK:
				typ = fs.ModeSymlink
			case syscall.DT_REG:
				typ = 0
			case syscall.DT_SOCK:
				typ = fs.ModeSocket
			default:
				return os.ReadDir(name) // os.ReadDir stats the entry
			}
			ents = append(ents, &dirent{parent: name, name: string(nm), typ: typ})
		}
	}
	slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return ents, nil
}

// dirent is the fs.DirEntry of dirLister, as package os's.
type dirent struct {
	parent, name string
	typ          fs.FileMode
}

func (d *dirent) Name() string               { return d.name }
func (d *dirent) IsDir() bool                { return d.typ.IsDir() }
func (d *dirent) Type() fs.FileMode          { return d.typ }
func (d *dirent) Info() (fs.FileInfo, error) { return os.Lstat(d.parent + "/" + d.name) }
func (d *dirent) String() string             { return fs.FormatDirEntry(d) }
