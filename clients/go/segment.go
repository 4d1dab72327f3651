package uidgen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

const (
	// maxRange is far above the service's largest range (1,000,000) and far below sealed,
	// so cursor adds can never wrap into a valid index.
	maxRange = 1 << 40
	// sealed is where Close moves a cursor: every later add lands past the range.
	sealed = 1 << 62
)

// segRange is one range F..=L; its cursor is the only thing the fast path touches.
type segRange struct {
	first, size uint64
	receipt     string
	srv         *server // the server that handed it out, which alone takes its tail back
	prefetchAt  uint64  // the index whose taker starts the next fetch
	taken       atomic.Uint64

	started   time.Time // when it became current; under the tag's mu
	accounted bool      // its lifetime already moved the size; under the tag's mu
}

type tagState struct {
	c    *Client
	name string
	cur  atomic.Pointer[segRange]

	mu    sync.Mutex
	next  *segRange // at most one range waiting behind cur
	fetch *fetch    // the fetch in flight, if any
	size  uint64    // the count the next request asks for
}

// take hands out up to want consecutive IDs (at least one) from the current range.
func (t *tagState) take(ctx context.Context, want uint64) (first, got uint64, err error) {
	failures := 0
	for {
		r := t.cur.Load()
		if r != nil {
			// The fast path: one atomic add; each index is handed out once.
			i := r.taken.Add(want) - want
			if i < r.size {
				got = r.size - i
				if got > want {
					got = want
				}
				if r.prefetchAt >= i && r.prefetchAt < i+got {
					t.prefetch(r)
				}
				return r.first + i, got, nil
			}
		}
		f, err := t.refill(r)
		if err != nil {
			return 0, 0, err
		}
		if f == nil {
			continue
		}
		select {
		case <-f.done:
		case <-ctx.Done():
			return 0, 0, ctx.Err()
		}
		// A take waits for at most the fetch in flight and then one of its own.
		if f.err != nil {
			if failures++; failures == 2 {
				return 0, 0, f.err
			}
		}
	}
}

// refill runs when r (nil at first) is used up: it moves the next range in, or returns
// the fetch to wait for. (nil, nil) means "look at the current range again".
func (t *tagState) refill(r *segRange) (*fetch, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.c.closed.Load() {
		return nil, ErrClosed
	}
	if t.cur.Load() != r {
		return nil, nil
	}
	now := t.c.cfg.now()
	if r != nil && !r.accounted {
		r.accounted = true
		t.adapt(now.Sub(r.started))
	}
	if t.next != nil {
		n := t.next
		t.next = nil
		n.started = now
		t.cur.Store(n)
		return nil, nil
	}
	if t.fetch == nil {
		t.startFetch()
	}
	return t.fetch, nil
}

// adapt follows the rate (item 1): a range used up within target doubles the next
// request, one that lasted over twice target halves it.
func (t *tagState) adapt(lasted time.Duration) {
	cfg := &t.c.cfg
	switch {
	case lasted < cfg.target:
		t.size *= 2
		if t.size > cfg.maxCount {
			t.size = cfg.maxCount
		}
	case lasted > 2*cfg.target:
		t.size /= 2
		if t.size < cfg.minCount {
			t.size = cfg.minCount
		}
	}
}

// prefetch starts fetching the next range once prefetchShare of r is handed out.
func (t *tagState) prefetch(r *segRange) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.c.closed.Load() || t.cur.Load() != r || t.next != nil || t.fetch != nil {
		return
	}
	t.startFetch()
}

// startFetch runs under t.mu; the range it brings waits in t.next.
func (t *tagState) startFetch() {
	f := &fetch{done: make(chan struct{})}
	t.fetch = f
	count := t.size
	c := t.c
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		var a rangeAnswer
		path := "/v1/segment/" + url.PathEscape(t.name) + "/range?count=" + strconv.FormatUint(count, 10)
		srv, err := c.call(c.bg, "POST", path, &a)
		t.mu.Lock()
		if err == nil {
			r := &segRange{first: a.first, size: a.last - a.first + 1, receipt: a.Receipt, srv: srv}
			r.prefetchAt = uint64(float64(r.size) * c.cfg.prefetchShare)
			if r.prefetchAt >= r.size {
				r.prefetchAt = r.size - 1
			}
			t.next = r
		}
		t.fetch = nil
		f.err = err
		t.mu.Unlock()
		close(f.done)
	}()
}

type giveback struct {
	r      *segRange
	unused uint64 // the first ID not handed out
}

// seal stops the tag for good and returns what to give back: the next range whole,
// then the current range's tail.
func (t *tagState) seal() []giveback {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []giveback
	next := t.next
	if next != nil {
		out = append(out, giveback{next, next.first})
		t.next = nil
	}
	if r := t.cur.Load(); r != nil {
		// The swap splits takers exactly: an add before it is counted in used, one
		// after it lands past the range and finds the client closed.
		used := r.taken.Swap(sealed)
		// The tail only to the process that took the next range back (or when there is
		// none): after another process's range went back, it would sit below what that
		// process last handed out, which its data-loss check takes for a store that went
		// back.
		if used < r.size && (next == nil || next.srv == r.srv) {
			out = append(out, giveback{r, r.first + used})
		}
	}
	return out
}

// giveBack offers U..=L back to the server that handed the range out, once: any other
// server would refuse the receipt, and a failure is only a gap.
func (c *Client) giveBack(ctx context.Context, tag string, g giveback) error {
	last := g.r.first + g.r.size - 1
	path := "/v1/segment/" + url.PathEscape(tag) + "/giveback?first=" +
		strconv.FormatUint(g.unused, 10) + "&receipt=" + url.QueryEscape(g.r.receipt)
	var a givebackAnswer
	problem, err := c.attempt(ctx, g.r.srv, "POST", path, &a)
	if err == nil && problem != "" {
		err = errors.New(problem)
	}
	if err != nil {
		return fmt.Errorf("%s %d..=%d to %s: %w", tag, g.unused, last, g.r.srv.base, err)
	}
	return nil
}

type rangeAnswer struct {
	Tag      string      `json:"tag"`
	First    json.Number `json:"first"`
	Last     json.Number `json:"last"`
	FirstStr string      `json:"first_str"`
	LastStr  string      `json:"last_str"`
	Receipt  string      `json:"receipt"`

	first, last uint64
}

func (a *rangeAnswer) check() error {
	var err error
	if a.first, err = exact(a.FirstStr, a.First); err != nil {
		return fmt.Errorf("first: %w", err)
	}
	if a.last, err = exact(a.LastStr, a.Last); err != nil {
		return fmt.Errorf("last: %w", err)
	}
	if a.last < a.first || a.last-a.first >= maxRange {
		return fmt.Errorf("a range %d..=%d", a.first, a.last)
	}
	return nil
}

type givebackAnswer struct {
	GivenBack bool `json:"given_back"`
}

func (*givebackAnswer) check() error { return nil }

// exact reads an ID from its text form, or else from the JSON number's digits, never
// through a float64, so IDs above 2^53 stay exact.
func exact(text string, number json.Number) (uint64, error) {
	if text == "" {
		text = number.String()
	}
	return strconv.ParseUint(text, 10, 64)
}
