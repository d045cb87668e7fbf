package collect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/wharfhq/wharf/internal/core/apiclient"
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
	cl, err := apiclient.New(base, token, client)
	if err != nil {
		return false, &plugin.Error{Layer: plugin.LayerIntent, Type: TypeReportRefused, Object: base, Err: err,
			Hint: "give the server as http(s)://host[:port]"}
	}
	res, err := cl.Send(ctx, apiclient.Request{Method: http.MethodPut, Path: "/v1/inventory/machines/" + url.PathEscape(r.Machine.ID),
		JSON: json.RawMessage(body), Limit: 64 << 10})
	if apiclient.IsUnreachable(err) {
		return false, &plugin.Error{Layer: plugin.LayerMaterialization, Type: TypeServerUnreachable, Object: base, Err: err,
			Hint: "check the server address and that it is running; a background report retries on its own"}
	}
	var ae *apiclient.APIError
	if errors.As(err, &ae) {
		return false, refused(ae)
	}
	if err != nil {
		return false, &plugin.Error{Layer: plugin.LayerMaterialization, Type: TypeReportRefused, Object: base, Err: err,
			Hint: "is this a wharf server? check the URL (the client's policy server)"}
	}
	var out struct {
		Changed *bool `json:"changed"`
	}
	if err := json.Unmarshal(res.Body, &out); err != nil || out.Changed == nil || res.Status != http.StatusOK {
		return false, &plugin.Error{Layer: plugin.LayerMaterialization, Type: TypeReportRefused, Object: base,
			Err:  fmt.Errorf("the server answered %d without {\"changed\": bool}: %q", res.Status, truncate(string(res.Body), 200)),
			Hint: "is this a wharf server? check the URL (the client's policy server)"}
	}
	return *out.Changed, nil
}

// refused is the server's refusal of a report, as the API client decodes
// it, with the next step for the statuses only a report meets.
func refused(ae *apiclient.APIError) error {
	hint := ae.Hint
	switch ae.Status {
	case http.StatusNotFound, http.StatusMethodNotAllowed:
		hint = "the server does not take inventory reports; upgrade it, or check the URL"
	case http.StatusTooManyRequests:
		hint = "the server limits reports per machine; try again later"
	case http.StatusRequestEntityTooLarge, http.StatusBadRequest:
		hint = "the server refused the report's content; run: wharf inventory report --json to see it"
	}
	layer := plugin.LayerMaterialization
	if ae.Layer == apiclient.LayerIntent {
		layer = plugin.LayerIntent
	}
	return &plugin.Error{Layer: layer, Type: TypeReportRefused, Err: ae, Hint: hint}
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
