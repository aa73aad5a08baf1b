package runs

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-egress/sluice/rules"
)

// YAMLOptions say how a draft is written.
type YAMLOptions struct {
	// TokenFile or TokenEnv is the tenant's token reference, as in the
	// config in force, so that `sluice config check` accepts the draft.
	TokenFile, TokenEnv string
	// Header lines go first, as comments.
	Header []string
}

// DraftHeader is the header of the draft `sluice policy propose` prints:
// the command that drafted it (class "" for every class, since as given)
// and what it was drafted from.
func DraftHeader(tenant, class, since string, observations int, from time.Time) []string {
	cmd := "Drafted by: sluice policy propose --tenant " + tenant
	if class != "" {
		cmd += " --class " + strings.TrimSpace(class)
	}
	return []string{cmd + " --since " + since,
		fmt.Sprintf("From %d observation(s) since %s. Review every entry before using it: risk high first.", observations, from.UTC().Format(time.RFC3339))}
}

// maxRunsShown bounds the runs an entry's comment names.
const maxRunsShown = 5

// YAML writes the draft as a config file that `sluice config check`
// accepts: the tenant with its token reference and the drafted classes,
// each entry under a comment with its evidence and risk. Entries that could
// not stand in a config, and what was refused, are comments only.
func (p Proposal) YAML(o YAMLOptions) []byte {
	var b strings.Builder
	for _, h := range o.Header {
		fmt.Fprintf(&b, "# %s\n", oneLine(h))
	}
	b.WriteString("version: 1\ntenants:\n")
	fmt.Fprintf(&b, "  %s:\n", p.Tenant)
	switch {
	case o.TokenEnv != "":
		fmt.Fprintf(&b, "    token_env: %s\n", strconv.Quote(o.TokenEnv))
	default:
		fmt.Fprintf(&b, "    token_file: %s\n", strconv.Quote(o.TokenFile))
	}
	if len(p.Classes) == 0 {
		b.WriteString("    classes: {}\n    # nothing was observed\n")
		return []byte(b.String())
	}
	b.WriteString("    classes:\n")
	for _, c := range p.Classes {
		fmt.Fprintf(&b, "      %s:\n", c.Name)
		writeEntries(&b, "allow", c.Allow)
		writeEntries(&b, "passthrough", c.Passthrough)
		if len(c.Refused) > 0 {
			b.WriteString("        # refused, not proposed (a refusal may have been an attack; grant it by hand if it was not):\n")
			for _, e := range c.Refused {
				fmt.Fprintf(&b, "        #   %s: %s\n", entryLine(e.Entry), evidence(e))
			}
		}
	}
	return []byte(b.String())
}

func writeEntries(b *strings.Builder, list string, es []ProposedEntry) {
	ok := 0
	for _, e := range es {
		if e.Problem == "" {
			ok++
		}
	}
	if ok == 0 {
		fmt.Fprintf(b, "        %s: []\n", list)
	} else {
		fmt.Fprintf(b, "        %s:\n", list)
	}
	for _, e := range es {
		ind := "          "
		if e.Problem != "" {
			fmt.Fprintf(b, "%s# not proposed: %s\n", ind, oneLine(e.Problem))
			fmt.Fprintf(b, "%s#   %s\n", ind, entryLine(e.Entry))
			continue
		}
		fmt.Fprintf(b, "%s# risk %s: %s\n", ind, e.Risk, e.RiskWhy)
		fmt.Fprintf(b, "%s# %s\n", ind, evidence(e))
		if len(e.Presets) > 0 {
			fmt.Fprintf(b, "%s# already covered by preset %s\n", ind, strings.Join(e.Presets, ", "))
		}
		fmt.Fprintf(b, "%s- host: %s\n", ind, strconv.Quote(e.Entry.Host))
		if len(e.Entry.Ports) > 0 {
			fmt.Fprintf(b, "%s  ports: [%s]\n", ind, joinInts(e.Entry.Ports))
		}
		if len(e.Entry.Methods) > 0 {
			fmt.Fprintf(b, "%s  methods: [%s]\n", ind, strings.Join(e.Entry.Methods, ", "))
		}
		if len(e.Entry.Paths) > 0 {
			q := make([]string, len(e.Entry.Paths))
			for i, p := range e.Entry.Paths {
				q[i] = strconv.Quote(p)
			}
			fmt.Fprintf(b, "%s  paths: [%s]\n", ind, strings.Join(q, ", "))
		}
	}
}

// evidence is "12 requests by 2 runs (r-1, r-2), first …, last …".
func evidence(e ProposedEntry) string {
	s := fmt.Sprintf("%d request(s)", e.Count)
	if n := len(e.Runs); n > 0 {
		shown := e.Runs[:min(n, maxRunsShown)]
		s += fmt.Sprintf(" by %d run(s) (%s", n, strings.Join(shown, ", "))
		if n > maxRunsShown {
			s += fmt.Sprintf(", +%d more", n-maxRunsShown)
		}
		s += ")"
	}
	if !e.First.IsZero() {
		s += ", first " + e.First.UTC().Format(time.RFC3339) + ", last " + e.Last.UTC().Format(time.RFC3339)
	}
	return s
}

// entryLine is an entry on one line, for comments.
func entryLine(e rules.Entry) string {
	s := "host " + strconv.Quote(e.Host)
	if len(e.Ports) > 0 {
		s += " ports [" + joinInts(e.Ports) + "]"
	}
	if len(e.Methods) > 0 {
		s += " methods [" + strings.Join(e.Methods, ", ") + "]"
	}
	for _, p := range e.Paths {
		s += " path " + strconv.Quote(p)
	}
	return oneLine(s)
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ", ")
}

// oneLine keeps a comment on its line.
func oneLine(s string) string {
	return strings.NewReplacer("\n", " ", "\r", " ").Replace(s)
}
