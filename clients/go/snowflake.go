package uidgen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
)

type flakeBatch struct {
	ids     []uint64
	expires int64 // unix ns by the client's clock: arrival + validity
	taken   atomic.Uint64
}

type flakeState struct {
	cur   atomic.Pointer[flakeBatch]
	mu    sync.Mutex
	fetch *fetch
}

// Snowflake hands out a snowflake ID at most validity after its batch arrived.
func (c *Client) Snowflake(ctx context.Context) (uint64, error) {
	failures := 0
	for {
		b := c.flakes.cur.Load()
		if b != nil {
			i := b.taken.Add(1) - 1
			// The clock is read after the take, so the ID is checked at hand-out; an
			// expired one is dropped, and so are the rest of its batch.
			if i < uint64(len(b.ids)) && c.cfg.now().UnixNano() < b.expires {
				return b.ids[i], nil
			}
		}
		f, err := c.flakeRefill(b)
		if err != nil {
			return 0, err
		}
		if f == nil {
			continue
		}
		select {
		case <-f.done:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
		if f.err != nil {
			if failures++; failures == 2 {
				return 0, f.err
			}
		}
	}
}

// flakeRefill returns the fetch of a new batch to wait for, or (nil, nil) when another
// batch already replaced b.
func (c *Client) flakeRefill(b *flakeBatch) (*fetch, error) {
	s := &c.flakes
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.closed.Load() {
		return nil, ErrClosed
	}
	if s.cur.Load() != b {
		return nil, nil
	}
	if s.fetch != nil {
		return s.fetch, nil
	}
	f := &fetch{done: make(chan struct{})}
	s.fetch = f
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		var a flakeAnswer
		_, err := c.call(c.bg, "GET", "/v1/snowflake?count="+strconv.FormatUint(c.cfg.snowflakeBatch, 10), &a)
		s.mu.Lock()
		if err == nil && !c.closed.Load() {
			s.cur.Store(&flakeBatch{ids: a.ids, expires: c.cfg.now().Add(c.cfg.validity).UnixNano()})
		}
		s.fetch = nil
		f.err = err
		s.mu.Unlock()
		close(f.done)
	}()
	return f, nil
}

// seal makes every later take miss the batch in hand and find the client closed.
func (s *flakeState) seal() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b := s.cur.Load(); b != nil {
		b.taken.Store(sealed)
	}
}

type flakeAnswer struct {
	IDs    []json.Number `json:"ids"`
	IDsStr []string      `json:"ids_str"`

	ids []uint64
}

func (a *flakeAnswer) check() error {
	n := len(a.IDsStr)
	if n == 0 {
		n = len(a.IDs)
	}
	if n == 0 {
		return errors.New("no IDs")
	}
	a.ids = make([]uint64, n)
	for i := range a.ids {
		var text string
		var num json.Number
		if i < len(a.IDsStr) {
			text = a.IDsStr[i]
		} else {
			num = a.IDs[i]
		}
		id, err := exact(text, num)
		if err != nil {
			return fmt.Errorf("ids: %w", err)
		}
		a.ids[i] = id
	}
	return nil
}
