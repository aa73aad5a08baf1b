// Package apiclient calls the admin listener's JSON API for the CLI.
package apiclient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// maxAnswer bounds what an answer may hold (a run's answer carries its CA).
const maxAnswer = 16 << 20

// Client sends JSON requests to the API at Base.
type Client struct {
	// Base is the admin listener's URL (http://127.0.0.1:8080).
	Base *url.URL
	// Auth sets the request's credentials. Nil: none (the API answers 401).
	Auth func(*http.Request)
	// HTTP sends the requests. Nil: a client with a 60s timeout that never
	// goes through a proxy (HTTPS_PROXY in a sandbox's env must not carry
	// admin credentials to the gateway).
	HTTP *http.Client
}

func (c *Client) http() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{Proxy: nil}}
}

// Do sends in (nil: no body) as JSON to path and decodes the JSON answer into
// out (nil: ignored); an error status returns the API's error message.
func (c *Client) Do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	u := c.Base.JoinPath(path)
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Auth != nil {
		c.Auth(req)
	}
	resp, err := c.http().Do(req)
	if err != nil {
		return fmt.Errorf("admin API: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return fmt.Errorf("admin API: %w", err)
	}
	if resp.StatusCode >= 300 {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(b, &e) == nil && e.Error != "" {
			return fmt.Errorf("admin API: %s (%d)", e.Error, resp.StatusCode)
		}
		return fmt.Errorf("admin API: %s", resp.Status)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("admin API: bad answer: %w", err)
		}
	}
	return nil
}
