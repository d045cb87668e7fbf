package shell

import (
	"strings"

	"github.com/wharfhq/wharf/internal/core/lazyre"
	"github.com/wharfhq/wharf/plugin"
)

// layerPrefix matches the name of an error layer where plugin.Error puts it:
// at the start of a message, or after the ": " of a wrapping error. The
// layers classify errors for exit codes and --json types; people read the
// object and what happened, not wharf's internal layer names.
var layerPrefix = lazyre.New(`(^|: )(` + strings.Join([]string{
	string(plugin.LayerIntent), string(plugin.LayerMaterialization), string(plugin.LayerActive),
	string(plugin.LayerTrust), string(plugin.LayerPolicy), string(plugin.LayerDependency),
}, "|") + `): `)

// PlainMessage is an error message as a person should read it: without
// layer names, and without a segment repeated by two wrapping errors
// ("x.json: x.json: bad" reads "x.json: bad").
func PlainMessage(msg string) string {
	msg = withoutHTML(msg)
	for {
		next := layerPrefix.ReplaceAllString(msg, "$1")
		if next == msg {
			break
		}
		msg = next
	}
	parts := strings.Split(msg, ": ")
	out := make([]string, 0, len(parts))
	for i, p := range parts {
		last := i == len(parts)-1
		// "f.json: f.json: bad" and "f.json: f.json:2: bad" name the
		// object twice; keep the more precise one.
		if !last && p != "" && (parts[i+1] == p || strings.HasPrefix(parts[i+1], p+":")) {
			continue
		}
		out = append(out, p)
	}
	return strings.Join(out, ": ")
}

// withoutHTML cuts an HTML page (a git host's or proxy's 404 or login page,
// which transports put into their errors) out of a message: the status and
// the URL before it say what happened; the page only buries them.
func withoutHTML(msg string) string {
	lower := strings.ToLower(msg)
	i := -1
	for _, tag := range []string{"<!doctype", "<html", "<head", "<body"} {
		if j := strings.Index(lower, tag); j >= 0 && (i < 0 || j < i) {
			i = j
		}
	}
	if i < 0 {
		return msg
	}
	return strings.TrimRight(msg[:i], ": \n\t") + " (the server answered with an HTML page, not shown)"
}

// ShownError is an error whose content the command already printed on
// stdout (policy check's verdicts): it sets the exit code and, under --json,
// the error object, but is not printed again for a person.
type ShownError struct{ error }

func (e ShownError) Unwrap() error { return e.error }

// Shown marks err as already printed; nil stays nil.
func Shown(err error) error {
	if err == nil {
		return nil
	}
	return ShownError{err}
}
