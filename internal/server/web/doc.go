// Package web holds wharf's web console: server-rendered html/template
// pages, their embedded static assets (CSS, no external CDN), the view-model
// types the pages render, a deterministic layout of dependency graphs for
// inline SVG, and a Renderer. It imports nothing from wharf: package api
// fills the view models from its own services and serves the pages.
package web
