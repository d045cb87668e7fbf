package api

import (
	"sort"
	"time"

	"github.com/wharfhq/wharf/internal/core/inventory"
	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/internal/server/fleet"
	"github.com/wharfhq/wharf/internal/server/web"
)

// The fleet's history (fleet.Day records) as the console's charts.

// maxChartLines is how many versions an adoption chart draws; the rest
// are summed as one line.
const maxChartLines = 6

// recordHistory records the day of every plugin a changed report lists,
// apart from the request (at most once per plugin per interval per
// replica); the console's chart pages record the plugin they show.
func (s *Server) recordHistory(rep inventory.Report) {
	seen := map[string]bool{}
	for _, p := range rep.Plugins {
		if seen[p.ID] || !s.inv.RecordDue(p.ID) {
			continue
		}
		seen[p.ID] = true
		go func(id string) {
			if _, err := s.inv.RecordDay(id); err != nil {
				s.log.Warn("record the fleet's day", "plugin", id, "err", err)
			}
		}(p.ID)
	}
}

// history records today's day of plugin id and returns its days, with the
// days between records filled by the record before (nothing changed that
// anyone recorded), from `from` (zero: the first record) to today.
func (u *console) history(id string, from time.Time) ([]fleet.Day, error) {
	if _, err := u.s.inv.RecordDay(id); err != nil {
		return nil, err
	}
	days, err := u.s.inv.History(id)
	if err != nil || len(days) == 0 {
		return days, err
	}
	byDate := map[string]fleet.Day{}
	for _, d := range days {
		byDate[d.Date] = d
	}
	start, err := time.Parse(time.DateOnly, days[0].Date)
	if err != nil {
		return nil, err
	}
	end, err := time.Parse(time.DateOnly, days[len(days)-1].Date)
	if err != nil {
		return nil, err
	}
	if !from.IsZero() {
		f, _ := time.Parse(time.DateOnly, from.UTC().Format(time.DateOnly))
		if f.After(start) {
			start = f
		}
	}
	var out []fleet.Day
	prev := fleet.Day{}
	for _, d := range days {
		if t, _ := time.Parse(time.DateOnly, d.Date); !t.After(start) {
			prev = d
		}
	}
	for t := start; !t.After(end); t = t.AddDate(0, 0, 1) {
		date := t.Format(time.DateOnly)
		if d, ok := byDate[date]; ok {
			prev = d
		}
		p := prev
		p.Date = date
		out = append(out, p)
	}
	return out, nil
}

func (u *console) adoptionChart(id string) (*web.Chart, error) {
	days, err := u.history(id, time.Time{})
	if err != nil || len(days) == 0 {
		return nil, err
	}
	total := map[string]int{}
	for _, d := range days {
		for v, n := range d.Versions {
			total[v] += n
		}
	}
	versions := make([]string, 0, len(total))
	for v := range total {
		versions = append(versions, v)
	}
	// The latest day's most common versions first.
	last := days[len(days)-1]
	sort.Slice(versions, func(i, j int) bool {
		a, b := versions[i], versions[j]
		if last.Versions[a] != last.Versions[b] {
			return last.Versions[a] > last.Versions[b]
		}
		if total[a] != total[b] {
			return total[a] > total[b]
		}
		return a < b
	})
	labels := make([]string, len(days))
	for i, d := range days {
		labels[i] = d.Date
	}
	var series []web.ChartSeries
	for i, v := range versions {
		name := v
		if name == "" {
			name = "(no version)"
		}
		if i == maxChartLines-1 && len(versions) > maxChartLines {
			name = "other versions"
		}
		if i >= maxChartLines {
			for j, d := range days {
				series[maxChartLines-1].Values[j] += d.Versions[v]
			}
			continue
		}
		s := web.ChartSeries{Name: name, Values: make([]int, len(days))}
		for j, d := range days {
			s.Values[j] = d.Versions[v]
		}
		series = append(series, s)
	}
	c := web.LineChart("adoption", "Machines per version of "+id, "Each line is a version of "+id+": how many machines had it on each day (UTC).", labels, series, -1, "")
	return &c, nil
}

func (u *console) convergenceChart(rv policy.Revocation) (*web.Chart, error) {
	if rv.Plugin == "" {
		return nil, nil
	}
	days, err := u.history(rv.Plugin, rv.Created.AddDate(0, 0, -7))
	if err != nil || len(days) == 0 {
		return nil, err
	}
	what := rv.Plugin + " " + rv.Version
	if rv.Digest != "" {
		what = rv.Plugin + " with digest " + rv.Digest
	}
	s := web.ChartSeries{Name: "machines running it active", Values: make([]int, len(days))}
	labels := make([]string, len(days))
	marker := -1
	created := rv.Created.UTC().Format(time.DateOnly)
	for i, d := range days {
		labels[i] = d.Date
		if d.Date == created {
			marker = i
		}
		if rv.Digest != "" {
			s.Values[i] = d.ActiveDigests[rv.Digest]
		} else {
			s.Values[i] = d.Active[rv.Version]
		}
	}
	c := web.LineChart("convergence", "Machines still running "+what, "How many machines reported "+what+" active on each day (UTC); the dashed line is the day it was revoked.",
		labels, []web.ChartSeries{s}, marker, "revoked")
	return &c, nil
}
