package source

import (
	"context"
	"hash"
	"net/http"
	"os"

	"github.com/wharfhq/wharf/internal/core/fetch"
)

// get performs one GET under the fetch step limits and returns the open
// body; closing it ends the step.
func (f *Fetcher) get(ctx context.Context, raw string, accept string) (*http.Response, error) {
	return f.Net.Open(ctx, fetch.Get{URL: raw, Accept: accept})
}

// download streams raw into a temporary file (outside the destination),
// feeding every byte to the hashes, and refuses more than max bytes. The
// caller removes the file.
func (f *Fetcher) download(ctx context.Context, raw string, max int64, hashes ...hash.Hash) (*os.File, error) {
	return f.Net.Download(ctx, fetch.Get{URL: raw, ProgressBar: f.ProgressBar}, max, hashes...)
}

func removeTemp(f *os.File) { fetch.RemoveTemp(f) }
