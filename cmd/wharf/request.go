package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/wharfhq/wharf/internal/client/collect"
	"github.com/wharfhq/wharf/internal/core/apiclient"
	"github.com/wharfhq/wharf/plugin"
)

// maxRequestReason is the server's bound on a reason, checked before
// anything is sent.
const maxRequestReason = 2048

// requestTimeout bounds one exchange with the server about requests.
const requestTimeout = 30 * time.Second

type requestOptions struct {
	reason string
	server string
}

func newRequestCmd(a *app) *cobra.Command {
	o := &requestOptions{}
	cmd := &cobra.Command{
		Use:   "request <name@marketplace> --reason TEXT",
		Short: "Ask the policy server's administrators for a plugin that policy denies",
		Long: "Sends a request for the plugin, with your reason, to the server the client takes policy from " +
			"(policyUrl of the managed settings, else --policy-url / WHARF_SERVER; --server sends it elsewhere), " +
			"with --token / WHARF_TOKEN. An administrator approves it (optionally until a date) or denies it, with a note. " +
			"An approval reaches this machine with the next policy pull, and only lifts what the server's layers marked " +
			"allowWaivers deny; see docs/admission.md. wharf request list, wharf list and wharf install show the answer.",
		Example: "  wharf request deploy@corp --reason \"needed for the Q1 release\"\n  wharf request list",
		Args:    exactArgs(1, "one <name@marketplace>"),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := plugin.ParseID(args[0])
			if err != nil || id.String() != args[0] {
				return &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Object: args[0],
					Err: fmt.Errorf("%q is not a plugin id", args[0]), Hint: "write it as name@marketplace, e.g. wharf request deploy@corp --reason \"...\""}
			}
			reason := strings.TrimSpace(o.reason)
			switch {
			case reason == "":
				return &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Object: "--reason",
					Err: errors.New("--reason is required"), Hint: "say why you need " + id.String() + ": an administrator reads it before answering"}
			case len(reason) > maxRequestReason || !utf8.ValidString(reason):
				return &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Object: "--reason",
					Err: fmt.Errorf("--reason is %d bytes; the limit is %d bytes of UTF-8 text", len(reason), maxRequestReason), Hint: "shorten the reason"}
			}
			cl, err := a.requestClient(o.server)
			if err != nil {
				return err
			}
			machine, err := collect.MachineID(a.env.MachineID())
			if err != nil {
				machine = "" // the request is the token's; the machine id only helps the administrator
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), requestTimeout)
			defer cancel()
			q, err := cl.CreateRequest(ctx, id.String(), reason, machine)
			if err != nil {
				return err
			}
			if a.cfg.JSON {
				return a.printJSON(q)
			}
			a.printf("requested %s (%s) from %s; an administrator answers it: wharf request list shows the answer\n", q.Plugin, q.ID, cl.Base)
			return nil
		},
	}
	cmd.Flags().StringVar(&o.reason, "reason", "", "why you need the plugin (required; at most 2048 bytes)")
	cmd.PersistentFlags().StringVar(&o.server, "server", "", "the wharf server to ask (default: the policy server)")
	list := &cobra.Command{
		Use:   "list",
		Short: "Show your requests and their answers",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := a.requestClient(o.server)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), requestTimeout)
			defer cancel()
			qs, err := cl.MyRequests(ctx)
			if err != nil {
				return err
			}
			qs = expireAt(qs, a.waiverNow())
			if a.cfg.JSON {
				return a.printJSON(nonNil(qs))
			}
			if len(qs) == 0 {
				a.printf("no requests; ask for a plugin policy denies with: wharf request <name@marketplace> --reason TEXT\n")
				return nil
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "PLUGIN\tREQUEST\tANSWER")
			for _, q := range qs {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", q.Plugin, q.ID, q.Describe())
			}
			return tw.Flush()
		},
	}
	cmd.AddCommand(list)
	return cmd
}

// requestClient is the API client of the server requests go to: --server,
// else the policy server, with the client's token.
func (a *app) requestClient(flag string) (*apiclient.Client, error) {
	if flag == "" {
		servers, err := a.managedPolicyServers()
		if err != nil {
			return nil, err
		}
		if len(servers) == 0 {
			return nil, &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Err: errors.New("no policy server to ask"),
				Hint: "requests go to the server your policy comes from: name it with --policy-url, WHARF_SERVER or policyUrl in the managed settings, or pass --server URL"}
		}
	}
	server, err := a.reportServer(flag)
	if err != nil {
		return nil, err
	}
	token := a.reportToken(server)
	if token == "" {
		return nil, &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Object: server, Err: errors.New("no token for the request"),
			Hint: "pass --token or set WHARF_TOKEN (your token of the server)"}
	}
	cl, err := apiclient.New(server, token, &http.Client{Timeout: requestTimeout})
	if err != nil {
		return nil, &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Object: "--server", Err: err, Hint: "pass --server http://host:port"}
	}
	return cl, nil
}

// myRequests returns the latest request per plugin of this client's
// token, when a policy server and a token are configured; nil otherwise
// or when the server does not answer (the answers are a convenience here,
// never a reason for a command to fail).
func (a *app) myRequests(ctx context.Context) map[string]apiclient.PluginRequest {
	servers, err := a.managedPolicyServers()
	if err != nil || len(servers) == 0 || a.reportToken(servers[0].URL) == "" {
		return nil
	}
	cl, err := apiclient.New(servers[0].URL, a.reportToken(servers[0].URL), &http.Client{Timeout: 5 * time.Second})
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	qs, err := cl.MyRequests(ctx)
	if err != nil {
		return nil
	}
	return apiclient.LatestByPlugin(expireAt(qs, a.waiverNow()))
}

// waiverNow is the time policy decides waivers' expiry with.
func (a *app) waiverNow() time.Time {
	if a.proc.now != nil {
		return a.proc.now()
	}
	return time.Now()
}

// expireAt marks the approvals past their date at now as expired: this
// machine's policy stops honouring them then, whatever the server's clock
// said when it answered.
func expireAt(qs []apiclient.PluginRequest, now time.Time) []apiclient.PluginRequest {
	for i, q := range qs {
		if q.Status == "approved" && q.Answer != nil && q.Answer.Until != nil && !now.Before(*q.Answer.Until) {
			qs[i].Status = "expired"
		}
	}
	return qs
}

// withRequestAnswer adds, to a policy denial of id, the answer to the
// client's request for it, or how to ask for it.
func (a *app) withRequestAnswer(ctx context.Context, id plugin.ID, err error) error {
	var pe *plugin.Error
	if err == nil && !a.cfg.JSON {
		// Installed: say so when it is thanks to an answered request.
		if q, ok := a.myRequests(ctx)[id.String()]; ok && q.Status == "approved" {
			a.printf("%s: %s\n", id, q.Describe())
		}
		return nil
	}
	if err == nil || !errors.As(err, &pe) || pe.Type != plugin.TypePolicyDenied {
		return err
	}
	reqs := a.myRequests(ctx)
	if reqs == nil {
		return err
	}
	c := *pe
	if q, ok := reqs[id.String()]; ok {
		c.Hint = id.String() + ": " + q.Describe() + requestNext(q)
	} else {
		c.Hint = "to ask an administrator for it: wharf request " + id.String() + " --reason TEXT; " + pe.Hint
	}
	return &c
}

// requestNext is what to do after an answer, for a plugin still denied.
func requestNext(q apiclient.PluginRequest) string {
	switch q.Status {
	case "approved":
		return " (the approval lifts only what the server's waivable layers deny; pull the policy again: wharf policy pull)"
	case "pending":
		return "; wait for an administrator's answer"
	}
	return "; to ask again: wharf request " + q.Plugin + " --reason TEXT"
}

// printRequestAnswers prints, under wharf list, the client's requests and
// their answers.
func (a *app) printRequestAnswers(ctx context.Context) {
	reqs := a.myRequests(ctx)
	if len(reqs) == 0 {
		return
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\nREQUESTED\tANSWER")
	for _, p := range slices.Sorted(maps.Keys(reqs)) {
		fmt.Fprintf(tw, "%s\t%s\n", p, reqs[p].Describe())
	}
	tw.Flush()
}
