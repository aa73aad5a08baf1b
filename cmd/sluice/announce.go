package main

import (
	"fmt"
	"io"

	"github.com/sluice-egress/sluice/config"
)

// announceDashboard says where the dashboard is and, when no user can log
// in to it, how to add one: without a user its login page refuses everyone.
func announceDashboard(w io.Writer, cfg *config.Config, admin string) {
	fmt.Fprintf(w, "dashboard on http://%s/\n", admin)
	if len(cfg.Dashboard.Users) > 0 {
		return
	}
	fmt.Fprintln(w, "  no dashboard user yet: nobody can log in. Add one:")
	fmt.Fprintln(w, "    sluice user hash > admin.hash   (reads the password on stdin)")
	fmt.Fprintln(w, "    and in the config: dashboard: {users: [{name: admin, role: admin, password_hash_file: admin.hash}]}")
}
