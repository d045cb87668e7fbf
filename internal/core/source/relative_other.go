//go:build !unix

package source

// relativeAt: see relative_unix.go; here every copy goes by path.
var relativeAt = false

// copyRelativeAt leaves every copy to copyRelative here.
func (f *Fetcher) copyRelativeAt(req *Request, mkt, rel string, t *tree) (string, bool, error) {
	return "", false, nil
}
