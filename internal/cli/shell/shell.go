// Package shell is the command-line contract wharf and wharf-server share:
// how an error becomes an exit code, how it is printed (a line and a hint
// for a person, one JSON object under --json), what a usage error is, and
// how the trusted keys of a home are read. Both commands end through Exit,
// so one error gives one exit code and one message whichever command met it.
package shell

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/wharfhq/wharf/internal/cli/cliconfig"
	"github.com/wharfhq/wharf/internal/core/apiclient"
	"github.com/wharfhq/wharf/internal/core/trust"
	"github.com/wharfhq/wharf/plugin"
)

// The exit codes of both commands (the README's table).
const (
	ExitOK          = 0
	ExitFailure     = 1
	ExitUsage       = 2
	ExitPolicy      = 3
	ExitTrust       = 4
	ExitDependency  = 5
	ExitCredentials = 6   // the wharf server refused the credentials (401, or 403 not for policy)
	ExitInterrupted = 130 // as a shell reports a process ended by SIGINT
)

// TypeUsage marks command-line and configuration mistakes (exit 2).
const TypeUsage = cliconfig.TypeUsage

// TypeInterrupted marks a command stopped by Ctrl-C (exit 130).
const TypeInterrupted = "interrupted"

// Error types of a wharf server's answers, as every command reports them.
const (
	// TypeCredentialsRefused: the server refused the credentials (a 401,
	// or a 403 that is not a policy decision): exit 6.
	TypeCredentialsRefused = "credentials-refused"
	// TypeServerUnreachable: the server did not answer.
	TypeServerUnreachable = "server-unreachable"
)

// ServerError makes a wharf server's answer, wherever in err's chain and
// whichever command met it, the one error shown: a refused credential or
// an unreachable server reads the same (message, hint, exit code) from
// every command. A server refusal no command classified takes the layer
// and hint the server sent. An unreachable policy server that leaves a
// command failing closed stays a policy error (exit 3).
func ServerError(err error) error {
	if ae, ok := errors.AsType[*apiclient.APIError](err); ok {
		if ae.CredentialsRefused() {
			return &plugin.Error{Layer: plugin.LayerIntent, Type: TypeCredentialsRefused, Err: ae, Hint: ae.Hint}
		}
		if _, ok := errors.AsType[*plugin.Error](err); !ok {
			typ := ae.Code
			if typ == "" {
				typ = "server-error"
			}
			return &plugin.Error{Layer: plugin.Layer(ae.Layer), Type: typ, Err: ae, Hint: ae.Hint}
		}
		return err
	}
	if ue, ok := errors.AsType[*apiclient.UnreachableError](err); ok && plugin.LayerOf(err) != plugin.LayerPolicy {
		return &plugin.Error{Layer: plugin.LayerMaterialization, Type: TypeServerUnreachable, Err: ue, Hint: ue.Hint()}
	}
	return err
}

// ErrInterrupted is wrapped by the error of an interrupted command.
var ErrInterrupted = errors.New("interrupted")

// Interrupted is the error of a command the user stopped while it ran. It
// replaces whatever the stopped step made of the cancellation (a failed
// download, a timeout), which would name the wrong cause.
func Interrupted() error {
	return &plugin.Error{Layer: plugin.LayerIntent, Type: TypeInterrupted, Err: ErrInterrupted,
		Hint: "nothing the command had not finished was recorded; run it again to finish it"}
}

// ExitCode is the one place where errors become exit codes.
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	if errors.Is(err, ErrInterrupted) {
		return ExitInterrupted
	}
	if ae, ok := errors.AsType[*apiclient.APIError](err); ok && ae.CredentialsRefused() {
		return ExitCredentials
	}
	switch plugin.LayerOf(err) {
	case plugin.LayerIntent:
		return ExitUsage
	case plugin.LayerPolicy:
		return ExitPolicy
	case plugin.LayerTrust:
		return ExitTrust
	case plugin.LayerDependency:
		return ExitDependency
	}
	return ExitFailure
}

// ErrorType names the error class in --json output.
func ErrorType(err error) string {
	var e *plugin.Error
	if errors.As(err, &e) && e.Type != "" {
		return e.Type
	}
	return "error"
}

// UsageError makes err a usage error (exit 2) of the command prog, with the
// hint to read its help; an error that already has a class keeps it.
func UsageError(prog string, err error) error {
	var e *plugin.Error
	if errors.As(err, &e) {
		return err
	}
	return &plugin.Error{Layer: plugin.LayerIntent, Type: TypeUsage, Err: err, Hint: "see: " + prog + " --help"}
}

// ExactArgs is cobra.ExactArgs with a message that names the arguments.
func ExactArgs(n int, names string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return &plugin.Error{Layer: plugin.LayerIntent, Type: TypeUsage,
				Err:  fmt.Errorf("%s takes %s (got %d argument(s))", cmd.CommandPath(), names, len(args)),
				Hint: "see: " + cmd.CommandPath() + " --help"}
		}
		return nil
	}
}

// MaxArgs is cobra.MaximumNArgs with a message that names the arguments.
func MaxArgs(n int, names string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) > n {
			return &plugin.Error{Layer: plugin.LayerIntent, Type: TypeUsage,
				Err:  fmt.Errorf("%s takes at most %s (got %d arguments)", cmd.CommandPath(), names, len(args)),
				Hint: "see: " + cmd.CommandPath() + " --help"}
		}
		return nil
	}
}

// HasJSONFlag reports whether args ask for --json before any "--". It
// decides the form of an error met before the flags were parsed.
func HasJSONFlag(args []string) bool {
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "--json" || a == "--json=true" {
			return true
		}
	}
	return false
}

// JSONError is the shape of an error under --json, written to stderr.
type JSONError struct {
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
		Hint    string `json:"hint,omitempty"`
		// Layer is where the failure is (intent, policy, trust, ...),
		// the class the exit code follows; the message does not repeat it.
		Layer string `json:"layer,omitempty"`
	} `json:"error"`
}

// PrintError writes err to w: "<prog>: <message>" and "Try: <hint>" for a
// person, or the JSONError object when asJSON. An error marked Shown is
// not printed again for a person.
func PrintError(w io.Writer, prog string, asJSON bool, err error) {
	hint := plugin.HintOf(err)
	if asJSON {
		var je JSONError
		je.Error.Type = ErrorType(err)
		je.Error.Message = PlainMessage(err.Error())
		je.Error.Hint = hint
		je.Error.Layer = string(plugin.LayerOf(err))
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(je)
		return
	}
	var se ShownError
	if errors.As(err, &se) {
		return
	}
	fmt.Fprintf(w, "%s: %s\n", prog, PlainMessage(err.Error()))
	if hint != "" {
		fmt.Fprintf(w, "Try: %s\n", hint)
	}
}

// Ending is how one invocation ended, for Exit.
type Ending struct {
	Prog   string
	Args   []string  // the command line, to find --json when flags were not parsed
	Stderr io.Writer // where the error goes
	// JSON is the resolved --json; Running is whether a command's own code
	// started (an error before that is a usage error).
	JSON    bool
	Running bool
}

// Exit prints err as e says and returns the exit code: an error met before
// a command ran (unknown command, bad flags or arguments) is a usage error.
func Exit(e Ending, err error) int {
	if err == nil {
		return ExitOK
	}
	if !e.Running {
		err = UsageError(e.Prog, err)
		if !e.JSON {
			e.JSON = HasJSONFlag(e.Args)
		}
	}
	err = ServerError(err)
	PrintError(e.Stderr, e.Prog, e.JSON, err)
	return ExitCode(err)
}

// TrustedKeys reads the public keys dir/*.pub (a home's keys directory,
// layout.Paths.Keys): the keys trusted for plugin signatures. A file that
// is not a public key is a trust error naming it.
func TrustedKeys(dir string) (trust.Keyring, error) {
	kr := trust.Keyring{}
	files, _ := filepath.Glob(filepath.Join(dir, "*.pub"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		if err := kr.AddPEM(b); err != nil {
			return nil, &plugin.Error{Layer: plugin.LayerTrust, Type: plugin.TypeTrustRejected, Object: f, Err: err,
				Hint: "remove or replace the key file"}
		}
	}
	return kr, nil
}
