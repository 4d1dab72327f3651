package uidgen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"
)

// maxBody bounds what is read of one answer: a 100,000-ID snowflake batch is about 4 MB.
const maxBody = 64 << 20

type server struct {
	base        string       // http://host:port, no trailing slash
	failedUntil atomic.Int64 // unix ns (by the client's clock) until which it is tried last
}

// baseURL takes host:port or an http(s):// base URL.
func baseURL(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", errors.New("uidgen: an empty server address")
	}
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return "", fmt.Errorf("uidgen: %q is not host:port or an http(s):// URL", s)
	}
	return strings.TrimRight(s, "/"), nil
}

// An answer checks itself once decoded; a bad one counts as that server failing.
type answer interface{ check() error }

// call sends one request, moving from server to server as PROTOCOL.md item 3 says. It
// returns the server that answered, a *RefusedError, an *UnavailableError or ctx's error.
func (c *Client) call(ctx context.Context, method, pathQuery string, out answer) (*server, error) {
	n := len(c.servers)
	start := int(c.cur.Load())
	now := c.cfg.now().UnixNano()
	// Healthy servers first, from the last one that answered; those in their
	// retry_after window last, so each is still tried once per call.
	order := make([]int, 0, n)
	var later []int
	for k := 0; k < n; k++ {
		i := (start + k) % n
		if c.servers[i].failedUntil.Load() > now {
			later = append(later, i)
		} else {
			order = append(order, i)
		}
	}
	order = append(order, later...)
	var attempts []Attempt
	pause := 50 * time.Millisecond
	for k, i := range order {
		if k > 0 {
			c.failovers.Add(1)
			if err := sleep(ctx, pause); err != nil {
				return nil, err
			}
			if pause *= 2; pause > time.Second {
				pause = time.Second
			}
		}
		s := c.servers[i]
		problem, err := c.attempt(ctx, s, method, pathQuery, out)
		if err != nil {
			return nil, err
		}
		if problem == "" {
			c.cur.Store(int64(i))
			return s, nil
		}
		s.failedUntil.Store(c.cfg.now().Add(c.cfg.retryAfter).UnixNano())
		attempts = append(attempts, Attempt{Server: s.base, Problem: problem})
	}
	return nil, &UnavailableError{Attempts: attempts}
}

// attempt asks one server once. A non-empty problem means "try the next server"; an
// error means stop (a refusal, or the caller's ctx).
func (c *Client) attempt(ctx context.Context, s *server, method, pathQuery string, out answer) (string, error) {
	actx, cancel := context.WithTimeout(ctx, c.cfg.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, method, s.base+pathQuery, nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Accept", "application/json")
	if c.cfg.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.cfg.token)
	}
	resp, err := c.http.Do(req)
	var body []byte
	if err == nil {
		// The timeout covers the body too, so a server that stalls mid-answer fails over.
		body, err = io.ReadAll(io.LimitReader(resp.Body, maxBody))
		resp.Body.Close()
	}
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		if actx.Err() != nil {
			return fmt.Sprintf("no answer within %v", c.cfg.timeout), nil
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return err.Error(), nil
	}
	status := resp.StatusCode
	switch {
	case status >= 500 || status == http.StatusRequestTimeout:
		msg, _ := refusalText(body)
		return fmt.Sprintf("HTTP %d: %s", status, msg), nil
	case status >= 400:
		msg, limit := refusalText(body)
		return "", &RefusedError{Status: status, Message: msg, Limit: limit, Server: s.base}
	case status < 200 || status > 299:
		return fmt.Sprintf("unexpected HTTP %d", status), nil
	}
	if err := json.Unmarshal(body, out); err != nil {
		return "bad answer: " + err.Error(), nil
	}
	if err := out.check(); err != nil {
		return "bad answer: " + err.Error(), nil
	}
	return "", nil
}

// refusalText reads {"error","limit","status"}, or falls back to the body's text.
func refusalText(body []byte) (msg, limit string) {
	var r struct {
		Error string          `json:"error"`
		Limit json.RawMessage `json:"limit"`
	}
	if json.Unmarshal(body, &r) != nil || r.Error == "" {
		text := strings.TrimSpace(string(body))
		if len(text) > 200 {
			text = text[:200] + "…"
		}
		return text, ""
	}
	if len(r.Limit) > 0 && string(r.Limit) != "null" {
		var s string
		if json.Unmarshal(r.Limit, &s) == nil {
			limit = s
		} else {
			limit = string(r.Limit)
		}
	}
	return r.Error, limit
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
