package gitserver

import (
	"context"
	"io"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// packWindow is the delta search window; git uses 10 as well.
const packWindow = 10

// encodePack writes a pack of objs to w, with ref deltas when the client
// cannot take offset deltas.
// ctxObjects stops object reads once ctx is done, so that building a pack
// keeps to the request's time limit.
type ctxObjects struct {
	storer.EncodedObjectStorer
	ctx context.Context
}

func (c ctxObjects) EncodedObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	if err := c.ctx.Err(); err != nil {
		return nil, err
	}
	return c.EncodedObjectStorer.EncodedObject(t, h)
}

func encodePack(w io.Writer, s storer.EncodedObjectStorer, objs []plumbing.Hash, refDeltas bool, window uint) error {
	_, err := packfile.NewEncoder(w, s, refDeltas).Encode(objs, window)
	return err
}
