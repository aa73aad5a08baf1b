// Package dashboard serves the security team's pages, the JSON API, health and metrics on the admin listener.
package dashboard
