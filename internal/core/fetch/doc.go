// Package fetch is wharf's one path to everything fetched from outside:
// git repositories (one go-git client setup: credentials, transports, ssh,
// proxy, the idle limit of package netidle, timeouts, progress), HTTP
// downloads (size limits, refusal of loopback and private addresses, dialing
// only the checked address) for npm metadata, npm tarballs, archives and
// marketplace.json URLs.
//
// A Config holds every setting a fetch obeys (the GitHub and GitLab hosts,
// the step timeout, the idle limit, the proxy, the size limits, the
// private-address switch); the command builds one from the config file and
// the environment and hands it to every fetch: marketplace add and update,
// plugin install and update, show.
//
// One credential rule covers every git fetch: a token goes only to the host
// it is configured for (GITHUB_TOKEN or GH_TOKEN to github.com or the
// configured GitHub host, GITLAB_TOKEN to gitlab.com or the configured
// GitLab host), only over https, and never after a redirect leaves that
// host. See Config.Credential.
//
// Git over http(s) and downloads obey one address rule: every connection
// dials an address the Guard checked and every redirect is checked before
// it is followed. go-git's transport is installed once for the process, so
// a git step carries its Guard and its RedirectCheck (the caller's policy on
// the repository a redirect leads to) in its context: WithGuard,
// WithRedirectCheck.
//
// Packages marketplace and source keep their domain logic (catalogs, source
// kinds, trees); this package knows nothing of plugins.
package fetch
