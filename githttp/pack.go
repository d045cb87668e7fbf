package githttp

import (
	"io"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// packWindow is the delta search window; git uses 10 as well.
const packWindow = 10

// encodePack writes a pack of objs to w, with ref deltas when the client
// cannot take offset deltas.
func encodePack(w io.Writer, s storer.EncodedObjectStorer, objs []plumbing.Hash, refDeltas bool) error {
	_, err := packfile.NewEncoder(w, s, refDeltas).Encode(objs, packWindow)
	return err
}
