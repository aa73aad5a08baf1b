package ca

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/sluice-egress/sluice/internal/fileutil"
)

// ExportEnvFile is the env file ExportEnv writes beside the trust files.
const ExportEnvFile = "sluice.env"

// ContainerEnv are the lines of sluice.env: the proxy for every client spelling
// and the trust files for every tool that reads its own (TrustEnv).
func ContainerEnv(proxy *url.URL, caPath, bundlePath string) []string {
	p := proxy.String()
	lines := []string{
		"HTTPS_PROXY=" + p, "https_proxy=" + p,
		"HTTP_PROXY=" + p, "http_proxy=" + p,
	}
	return append(lines, TrustEnv(caPath, bundlePath)...)
}

// MaskEnv returns env lines with the proxy token hidden, for printing: as
// written, and as a URL's userinfo or query escapes it (a tenant's token is
// whatever its token file holds).
func MaskEnv(lines []string, token string) []string {
	userinfo := strings.TrimPrefix(url.UserPassword("", token).String(), ":")
	out := make([]string, len(lines))
	for i, l := range lines {
		for _, t := range []string{userinfo, url.QueryEscape(token), token} {
			l = strings.ReplaceAll(l, t, "****")
		}
		out[i] = l
	}
	return out
}

// ExportEnv writes the trust files (Export) and sluice.env into outDir:
// ContainerEnv's lines for proxy, then extra (the tenant's phantom
// credentials, say). The env file is 0600: it holds the proxy credential.
// containerDir, when set, is where the container sees outDir mounted, and the
// trust paths in the env name it.
func (a *Authority) ExportEnv(outDir, containerDir string, proxy *url.URL, extra []string) (envPath string, lines []string, err error) {
	caPath, bundlePath, err := a.Export(outDir)
	if err != nil {
		return "", nil, err
	}
	if containerDir != "" {
		caPath = filepath.Join(containerDir, filepath.Base(caPath))
		bundlePath = filepath.Join(containerDir, filepath.Base(bundlePath))
	}
	lines = append(ContainerEnv(proxy, caPath, bundlePath), extra...)
	envPath = filepath.Join(outDir, ExportEnvFile)
	if err := fileutil.WriteFile(envPath, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		return "", nil, fmt.Errorf("ca: write %s: %w", envPath, err)
	}
	return envPath, lines, nil
}
