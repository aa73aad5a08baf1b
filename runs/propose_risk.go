package runs

import (
	"net/http"
	"slices"
	"strings"

	"github.com/sluice-egress/sluice/rules"
)

var riskRank = map[string]int{"low": 0, "medium": 1, "high": 2}

// userContent are destinations that accept arbitrary user content: what an
// agent sends there, anyone may read. By host suffix (a suffix ".x" also
// matches "x" itself), with the kind of place.
var userContent = []struct{ suffix, kind string }{
	// paste sites
	{"pastebin.com", "paste site"}, {"paste.ee", "paste site"}, {"hastebin.com", "paste site"},
	{"dpaste.org", "paste site"}, {"dpaste.com", "paste site"}, {"ghostbin.com", "paste site"},
	{"termbin.com", "paste site"}, {"paste.rs", "paste site"}, {"0x0.st", "paste site"},
	{"transfer.sh", "file drop"}, {"file.io", "file drop"},
	{"gist.github.com", "paste site (gists)"}, {"gist.githubusercontent.com", "paste site (gists)"},
	// issue trackers and code hosts that take writes
	{"api.github.com", "issue tracker and code host"}, {"github.com", "issue tracker and code host"},
	{"gitlab.com", "issue tracker and code host"}, {"bitbucket.org", "issue tracker and code host"},
	{".atlassian.net", "issue tracker"}, {"linear.app", "issue tracker"}, {"api.linear.app", "issue tracker"},
	// object stores
	{".amazonaws.com", "object store or cloud API"}, {"storage.googleapis.com", "object store"},
	{".blob.core.windows.net", "object store"}, {".r2.cloudflarestorage.com", "object store"},
	{".digitaloceanspaces.com", "object store"}, {".backblazeb2.com", "object store"},
	// webhooks and request catchers
	{"hooks.slack.com", "webhook"}, {"webhook.site", "webhook"}, {".pipedream.net", "webhook"},
	{".requestbin.com", "webhook"}, {".ngrok.io", "tunnel"}, {".ngrok-free.app", "tunnel"},
	{".trycloudflare.com", "tunnel"}, {"webhook.office.com", "webhook"},
	// chat
	{"slack.com", "chat"}, {"discord.com", "chat"}, {"discordapp.com", "chat"},
	{"api.telegram.org", "chat"}, {"matrix.org", "chat"},
}

// writeMethods can carry content out.
var writeMethods = []string{http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}

// exfilRisk ranks an entry's destination: high for a place that accepts
// arbitrary user content reached with methods that write (or any method), medium for
// such a place read-only or for any writes elsewhere, low otherwise.
func exfilRisk(e rules.Entry) (risk, why string) {
	host := strings.TrimPrefix(e.Host, "*.")
	writes := len(e.Methods) == 0 || slices.ContainsFunc(e.Methods, func(m string) bool { return slices.Contains(writeMethods, m) })
	for _, u := range userContent {
		s := strings.TrimPrefix(u.suffix, ".")
		if host == s || strings.HasSuffix(host, "."+s) {
			if writes {
				return "high", "accepts arbitrary user content (" + u.kind + ") and the entry lets writes through"
			}
			return "medium", "accepts arbitrary user content (" + u.kind + "); the entry only reads"
		}
	}
	if strings.HasPrefix(e.Host, "*.") && writes {
		return "medium", "a wildcard that lets writes through"
	}
	if writes {
		return "medium", "lets writes through"
	}
	return "low", "reads only"
}
