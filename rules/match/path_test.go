package match

import "testing"

func TestCleanPath(t *testing.T) {
	tests := []struct {
		name, in, want string
		wantErr        bool
	}{
		{name: "root", in: "/", want: "/"},
		{name: "plain", in: "/v1/models", want: "/v1/models"},
		{name: "trailing slash kept", in: "/v1/", want: "/v1/"},
		{name: "escaped at", in: "/%40scope%2fpkg", want: "/@scope/pkg"},
		{name: "dots in names", in: "/v1/a..b/.well-known/x.y", want: "/v1/a..b/.well-known/x.y"},
		{name: "double slash", in: "/v1//x", want: "/v1//x"},
		{name: "empty", in: "", wantErr: true},
		{name: "relative", in: "v1/x", wantErr: true},
		{name: "asterisk", in: "*", wantErr: true},
		{name: "dotdot", in: "/v1/../admin", wantErr: true},
		{name: "dot", in: "/v1/./x", wantErr: true},
		{name: "trailing dotdot", in: "/v1/..", wantErr: true},
		{name: "encoded dotdot", in: "/v1/%2e%2e/admin", wantErr: true},
		{name: "encoded dotdot upper", in: "/v1/%2E%2E/admin", wantErr: true},
		{name: "half encoded", in: "/v1/.%2e/admin", wantErr: true},
		{name: "encoded slash dotdot", in: "/v1/..%2fadmin", wantErr: true},
		{name: "backslash", in: "/v1\\..\\admin", wantErr: true},
		{name: "encoded backslash", in: "/v1/..%5cadmin", wantErr: true},
		{name: "servlet params", in: "/v1/..;/admin", wantErr: true},
		{name: "servlet params value", in: "/v1/..;x=y/admin", wantErr: true},
		{name: "double encoded dot", in: "/v1/%252e%252e/admin", wantErr: true},
		{name: "double encoded slash", in: "/v1/%252fadmin", wantErr: true},
		{name: "bad escape", in: "/v1/%zz", wantErr: true},
		{name: "truncated escape", in: "/v1/%2", wantErr: true},
		{name: "nul", in: "/v1/%00", wantErr: true},
		{name: "newline", in: "/v1/\n", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := CleanPath(tt.in)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("CleanPath(%q) = %q, want error", tt.in, got)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("CleanPath(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestPathUnder(t *testing.T) {
	tests := []struct {
		path, prefix string
		want         bool
	}{
		{"/v1/x", "/v1/", true},
		{"/v1/", "/v1/", true},
		{"/v1", "/v1/", false},
		{"/api/v2", "/api/v2", true},
		{"/api/v2/users", "/api/v2", true},
		{"/api/v20/users", "/api/v2", false},
		{"/api/v2.bak", "/api/v2", false},
		{"/api/v2;x", "/api/v2", false},
		{"/other", "/api", false},
		{"/", "/", true},
	}
	for _, tc := range tests {
		if got := PathUnder(tc.path, tc.prefix); got != tc.want {
			t.Errorf("PathUnder(%q, %q) = %v, want %v", tc.path, tc.prefix, got, tc.want)
		}
	}
}
