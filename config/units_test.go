package config

import (
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

func TestParseByteSize(t *testing.T) {
	tests := []struct {
		in      string
		want    ByteSize
		wantErr bool
	}{
		{in: "0", want: 0},
		{in: "4096", want: 4096},
		{in: "42B", want: 42},
		{in: "512KiB", want: 512 << 10},
		{in: "10MiB", want: 10 << 20},
		{in: "10 mib", want: 10 << 20},
		{in: "1GiB", want: 1 << 30},
		{in: "100KB", want: 100_000},
		{in: "2MB", want: 2_000_000},
		{in: "1GB", want: 1_000_000_000},
		{in: "-1", wantErr: true},
		{in: "1.5MiB", wantErr: true},
		{in: "10 parsecs", wantErr: true},
		{in: "MiB", wantErr: true},
		{in: "", wantErr: true},
		{in: "9223372036854775807KiB", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseByteSize(tt.in)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Fatalf("ParseByteSize(%q) = %d, %v; want %d, error %v", tt.in, got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestUnitsRoundTrip(t *testing.T) {
	in := struct {
		B ByteSize `yaml:"b"`
		D Duration `yaml:"d"`
	}{10 << 20, Duration(36 * time.Hour)}
	out, err := yaml.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	back := in
	back.B, back.D = 0, 0
	if err := yaml.Unmarshal(out, &back); err != nil || back != in {
		t.Fatalf("round trip of %s = %+v, %v; want %+v", out, back, err, in)
	}
	var d Duration
	for _, bad := range []string{"d: -1h", "d: soon", "d: [1h]"} {
		var v struct {
			D *Duration `yaml:"d"`
		}
		v.D = &d
		if err := yaml.Unmarshal([]byte(bad), &v); err == nil {
			t.Errorf("Unmarshal(%q) succeeded", bad)
		}
	}
}
