package store

import "sync"

// OnUse is a bbolt Store that holds the file (and its lock) only while a
// transaction runs: the first transaction opens it, the last one to finish
// closes it. Transactions that overlap in time share one open file. A
// command that spends most of its run on other work (fetching plugins)
// then makes another process wait for one transaction, not for the whole
// command; consistency across processes comes from transactions and the
// home's writer lock, not from holding the file.
type OnUse struct {
	path string
	opts Options
	// wrap, when set, turns an error of opening the file into the error
	// callers see.
	wrap func(error) error

	mu    sync.Mutex
	db    *Bolt
	users int
}

// OpenBoltOnUse returns an OnUse store over the bbolt file at path; opts
// apply to every open (LockTimeout is how long one transaction waits for
// another process). wrap, when not nil, rewrites errors of opening the file.
func OpenBoltOnUse(path string, opts Options, wrap func(error) error) *OnUse {
	return &OnUse{path: path, opts: opts, wrap: wrap}
}

func (s *OnUse) acquire() (*Bolt, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.db == nil {
		b, err := OpenBolt(s.path, s.opts)
		if err != nil {
			if s.wrap != nil {
				err = s.wrap(err)
			}
			return nil, err
		}
		s.db = b
	}
	s.users++
	return s.db, nil
}

func (s *OnUse) release() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.users--
	if s.users > 0 {
		return nil
	}
	err := s.db.Close()
	s.db = nil
	return err
}

// View implements Store.
func (s *OnUse) View(fn func(Reader) error) error {
	b, err := s.acquire()
	if err != nil {
		return err
	}
	err = b.View(fn)
	if cerr := s.release(); err == nil {
		err = cerr
	}
	return err
}

// Update implements Store.
func (s *OnUse) Update(fn func(Tx) error) error {
	b, err := s.acquire()
	if err != nil {
		return err
	}
	err = b.Update(fn)
	if cerr := s.release(); err == nil {
		err = cerr
	}
	return err
}

// Close implements Store. Nothing is held between transactions, so there
// is nothing to release.
func (s *OnUse) Close() error { return nil }
