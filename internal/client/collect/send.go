package collect

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/wharfhq/wharf/internal/core/inventory"
	"github.com/wharfhq/wharf/plugin"
)

// TypeReportRefused is the error type of a report the server did not take.
const TypeReportRefused = "inventory-report-refused"

// TypeServerUnreachable is the error type of a report that did not reach
// the server.
const TypeServerUnreachable = "inventory-server-unreachable"

// Send puts r to the server at base (PUT /v1/inventory/machines/{id}) with
// token, and returns whether the server's record changed.
func Send(ctx context.Context, client *http.Client, base, token string, r inventory.Report) (bool, error) {
	if client == nil {
		client = http.DefaultClient
	}
	// The server takes only a valid report: say here what is wrong with
	// this one rather than send it to be refused.
	if err := inventory.Validate(&r); err != nil {
		return false, &plugin.Error{Layer: plugin.LayerMaterialization, Type: TypeReportRefused, Object: r.Machine.ID, Err: err,
			Hint: "the field named above holds something a report cannot carry: reinstall or remove that plugin"}
	}
	body, err := json.Marshal(r)
	if err != nil {
		return false, err
	}
	if len(body) > inventory.MaxReportBytes {
		return false, &plugin.Error{Layer: plugin.LayerIntent, Type: TypeReportRefused, Object: r.Machine.ID,
			Err:  fmt.Errorf("the report is %d bytes; the server takes at most %d", len(body), inventory.MaxReportBytes),
			Hint: "remove plugins this machine no longer uses"}
	}
	u := strings.TrimRight(base, "/") + "/v1/inventory/machines/" + url.PathEscape(r.Machine.ID)
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, u, bytes.NewReader(body))
	if err != nil {
		return false, &plugin.Error{Layer: plugin.LayerIntent, Type: TypeReportRefused, Object: base, Err: err,
			Hint: "give the server as http(s)://host[:port]"}
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := client.Do(req)
	if err != nil {
		return false, &plugin.Error{Layer: plugin.LayerMaterialization, Type: TypeServerUnreachable, Object: base, Err: err,
			Hint: "check the server address and that it is running; a background report retries on its own"}
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	if res.StatusCode != http.StatusOK {
		return false, refused(base, r.Machine.ID, res.StatusCode, raw)
	}
	var out struct {
		Changed *bool `json:"changed"`
	}
	if err := json.Unmarshal(raw, &out); err != nil || out.Changed == nil {
		return false, &plugin.Error{Layer: plugin.LayerMaterialization, Type: TypeReportRefused, Object: base,
			Err:  fmt.Errorf("the server answered 200 without {\"changed\": bool}: %q", truncate(string(raw), 200)),
			Hint: "is this a wharf server? check the URL (the client's policy server)"}
	}
	return *out.Changed, nil
}

func refused(base, machine string, status int, raw []byte) error {
	msg := strings.TrimSpace(string(raw))
	var e struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
			Hint    string `json:"hint"`
		} `json:"error"`
	}
	if json.Unmarshal(raw, &e) == nil && e.Error.Message != "" {
		msg = e.Error.Message
	}
	hint := "see the server's log"
	layer := plugin.LayerMaterialization
	switch status {
	case http.StatusUnauthorized:
		layer, hint = plugin.LayerIntent, "give a valid token: --token or WHARF_TOKEN (wharf token create on the server)"
	case http.StatusForbidden:
		layer, hint = plugin.LayerIntent, "machine "+machine+" reports with the token it first reported with; use that token, or remove the machine-id file to report as a new machine"
		if e.Error.Code == "quota-exceeded" {
			// A new machine id would count against the same quota.
			hint = "the token's inventory quota is used up; ask the server's admin for a token for this machine, or for a larger maxMachines or maxPlugins"
		}
	case http.StatusNotFound, http.StatusMethodNotAllowed:
		hint = "the server does not take inventory reports; upgrade it, or check the URL"
	case http.StatusTooManyRequests:
		hint = "the server limits reports per machine; try again later"
	case http.StatusRequestEntityTooLarge, http.StatusBadRequest:
		hint = "the server refused the report's content; run: wharf inventory report --json to see it"
	}
	return &plugin.Error{Layer: layer, Type: TypeReportRefused, Object: base,
		Err: fmt.Errorf("server answered %d: %s", status, truncate(msg, 300)), Hint: hint}
}

// IsUnreachable reports whether err is a report that did not reach the
// server (kept for the next try) rather than one it refused.
func IsUnreachable(err error) bool {
	var pe *plugin.Error
	return errors.As(err, &pe) && pe.Type == TypeServerUnreachable
}

// DefaultTimeout bounds one background report, from reading the home to
// the server's answer.
const DefaultTimeout = 30 * time.Second
