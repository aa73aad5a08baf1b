package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestStoreConfig(t *testing.T) {
	const day = 24 * time.Hour
	tests := []struct {
		name    string
		yaml    string
		want    time.Duration
		wantErr string // "" for none; else a substring of the error
	}{
		{"absent: the default", "version: 1\n", 90 * day, ""},
		{"days", "store:\n  retention: 30d\n", 30 * day, ""},
		{"weeks", "store:\n  retention: 2w\n", 14 * day, ""},
		{"a Go duration", "store:\n  retention: 36h\n", 36 * time.Hour, ""},
		{"the minimum", "store:\n  retention: 1h\n", time.Hour, ""},
		{"zero", "store:\n  retention: 0d\n", 0, "sluice.yaml:2: store.retention: 0s is too short"},
		{"too short", "store:\n  retention: 10m\n", 0, "sluice.yaml:2: store.retention: 10m0s is too short"},
		{"empty", "store:\n  retention: \"\"\n", 0, "sluice.yaml:2: store.retention: bad period"},
		{"negative", "store:\n  retention: -1d\n", 0, "sluice.yaml:2: store.retention: bad period \"-1d\""},
		{"no unit", "store:\n  retention: 90\n", 0, "bad period \"90\""},
		{"a word", "store:\n  retention: forever\n", 0, "bad period \"forever\""},
		{"overflow", "store:\n  retention: 9999999999999d\n", 0, "too long"},
		{"a list", "store:\n  retention: [1d]\n", 0, "sluice.yaml:2: store.retention"},
		{"an unknown key", "store:\n  retention: 1d\n  path: /tmp/x.db\n", 0, "sluice.yaml:3: store.path"},
		{"postgres by env", "store:\n  driver: postgres\n  dsn_env: SLUICE_DSN\n", 90 * day, ""},
		{"postgres by file", "store:\n  driver: postgres\n  dsn_file: pg.dsn\n", 90 * day, ""},
		{"sqlite named", "store:\n  driver: sqlite\n", 90 * day, ""},
		{"postgres without a dsn", "store:\n  driver: postgres\n", 0, "sluice.yaml:2: store.driver: postgres needs exactly one"},
		{"postgres with both", "store:\n  driver: postgres\n  dsn_env: A\n  dsn_file: b\n", 0, "needs exactly one"},
		{"a dsn for sqlite", "store:\n  dsn_env: SLUICE_DSN\n", 0, "sluice.yaml:2: store.dsn_env: is for store.driver: postgres"},
		{"an unknown driver", "store:\n  driver: mysql\n", 0, "unknown driver \"mysql\""},
		{"a dsn in the config", "store:\n  driver: postgres\n  dsn: host=db.test\n", 0, "sluice.yaml:3: store.dsn"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(tc.yaml), "sluice.yaml")
			if err == nil {
				err = c.Validate()
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := time.Duration(c.Store.Retention); got != tc.want {
				t.Fatalf("retention %v, want %v", got, tc.want)
			}
		})
	}
	if Default().Store.Retention != DefaultRetention {
		t.Errorf("Default() retention %v", Default().Store.Retention)
	}
}

func TestPeriodString(t *testing.T) {
	for p, want := range map[Period]string{
		DefaultRetention:            "90d",
		Period(36 * time.Hour):      "36h0m0s",
		Period(0):                   "0s",
		Period(14 * 24 * time.Hour): "14d",
	} {
		if got := p.String(); got != want {
			t.Errorf("%d: %q, want %q", p, got, want)
		}
		if back, err := ParsePeriod(want); err != nil || back != p {
			t.Errorf("%q parses back as %v, %v", want, back, err)
		}
	}
}

func FuzzParsePeriod(f *testing.F) {
	for _, s := range []string{"90d", "2w", "36h", "-1d", "1.5d", "d", "+3d", "9223372036854775807w"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePeriod(s)
		if err != nil {
			return
		}
		if p < 0 {
			t.Fatalf("%q parsed as negative %d", s, p)
		}
		if back, err := ParsePeriod(p.String()); err != nil || back != p {
			t.Fatalf("%q -> %v -> %q -> %v, %v", s, time.Duration(p), p.String(), time.Duration(back), err)
		}
	})
}

func TestStoreDSN(t *testing.T) {
	dir := t.TempDir()
	const secret = "host=db.example.test password=fixture-not-a-secret"
	os.WriteFile(filepath.Join(dir, "pg.dsn"), []byte(secret+"\n"), 0o600)
	t.Setenv("SLUICE_TEST_DSN", "  "+secret+" ")
	t.Setenv("SLUICE_TEST_EMPTY", "")
	for _, tc := range []struct {
		name, env, file, want, wantErr string
	}{
		{name: "env", env: "SLUICE_TEST_DSN", want: secret},
		{name: "file", file: "pg.dsn", want: secret},
		{name: "empty env", env: "SLUICE_TEST_EMPTY", wantErr: "store.dsn_env SLUICE_TEST_EMPTY: empty"},
		{name: "missing file", file: "nope.dsn", wantErr: "store.dsn_file " + filepath.Join(dir, "nope.dsn")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Config{Path: filepath.Join(dir, "sluice.yaml"), Store: Store{Driver: StorePostgres, DSNEnv: tc.env, DSNFile: tc.file}}
			got, err := c.StoreDSN()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || strings.Contains(err.Error(), "fixture") {
					t.Fatalf("err %v, want %q and no DSN", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v", got, err)
			}
		})
	}
}
