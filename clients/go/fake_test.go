package uidgen

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeStore is what several fake servers share, as uidgen serve processes share a store.
type fakeStore struct {
	mu       sync.Mutex
	next     uint64 // the next segment ID
	flake    uint64 // the next snowflake ID
	receipts int
	events   []string // range and give-back events, in order, across servers
}

func newStore(first uint64) *fakeStore { return &fakeStore{next: first, flake: first} }

type fakeRange struct {
	first, last uint64
	receipt     string
}

type fakeGiveback struct {
	tag     string
	first   uint64
	receipt string
}

// fake is a uidgen serve stand-in: ranges, give-backs and snowflake batches, with knobs
// to refuse, fail or hang.
type fake struct {
	*httptest.Server
	store *fakeStore

	mu          sync.Mutex
	ranges      []fakeRange
	counts      []uint64
	givebacks   []fakeGiveback
	auths       []string
	hits        int
	flakeCalls  int
	status      int // when set, every request gets this status and errText
	errText     string
	limit       string
	hang        bool
	numbersOnly bool // leave out the *_str fields
}

func newFake(t *testing.T, store *fakeStore) *fake {
	f := &fake{store: store}
	f.Server = httptest.NewServer(f)
	t.Cleanup(f.Close)
	return f
}

func (f *fake) fail(status int, text, limit string) {
	f.mu.Lock()
	f.status, f.errText, f.limit = status, text, limit
	f.mu.Unlock()
}

func (f *fake) setHang(h bool) { f.mu.Lock(); f.hang = h; f.mu.Unlock() }

func (f *fake) snapshot() (ranges []fakeRange, counts []uint64, gbs []fakeGiveback, hits int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fakeRange(nil), f.ranges...), append([]uint64(nil), f.counts...),
		append([]fakeGiveback(nil), f.givebacks...), f.hits
}

func writeErr(w http.ResponseWriter, status int, text, limit string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if limit != "" {
		fmt.Fprintf(w, `{"error":%q,"limit":%q,"status":%d}`, text, limit, status)
	} else {
		fmt.Fprintf(w, `{"error":%q,"status":%d}`, text, status)
	}
}

func (f *fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.hits++
	f.auths = append(f.auths, r.Header.Get("Authorization"))
	status, text, limit, hang, numbersOnly := f.status, f.errText, f.limit, f.hang, f.numbersOnly
	f.mu.Unlock()
	if hang {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
		return
	}
	if status != 0 {
		writeErr(w, status, text, limit)
		return
	}
	q := r.URL.Query()
	path := r.URL.Path
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.Method == "POST" && strings.HasPrefix(path, "/v1/segment/") && strings.HasSuffix(path, "/range"):
		tag := strings.TrimSuffix(strings.TrimPrefix(path, "/v1/segment/"), "/range")
		if tag == "missing" {
			writeErr(w, 404, fmt.Sprintf("no tag %q", tag), "")
			return
		}
		count, err := strconv.ParseUint(q.Get("count"), 10, 64)
		if err != nil || count < 1 || count > 100000 {
			writeErr(w, 400, "count must be from 1 to 100000", "100000")
			return
		}
		s := f.store
		s.mu.Lock()
		s.receipts++
		rg := fakeRange{first: s.next, last: s.next + count - 1, receipt: fmt.Sprintf("%s#%d", f.URL, s.receipts)}
		s.next += count
		s.events = append(s.events, "range "+rg.receipt)
		s.mu.Unlock()
		f.mu.Lock()
		f.ranges = append(f.ranges, rg)
		f.counts = append(f.counts, count)
		f.mu.Unlock()
		// Numbers are written digit for digit, as the service does, so a client that
		// reads them through a float64 loses precision above 2^53.
		if numbersOnly {
			fmt.Fprintf(w, `{"tag":%q,"count":%d,"first":%d,"last":%d,"receipt":%q}`, tag, count, rg.first, rg.last, rg.receipt)
		} else {
			fmt.Fprintf(w, `{"tag":%q,"count":%d,"first":%d,"last":%d,"first_str":"%d","last_str":"%d","receipt":%q}`,
				tag, count, rg.first, rg.last, rg.first, rg.last, rg.receipt)
		}
	case r.Method == "POST" && strings.HasPrefix(path, "/v1/segment/") && strings.HasSuffix(path, "/giveback"):
		tag := strings.TrimSuffix(strings.TrimPrefix(path, "/v1/segment/"), "/giveback")
		first, _ := strconv.ParseUint(q.Get("first"), 10, 64)
		g := fakeGiveback{tag: tag, first: first, receipt: q.Get("receipt")}
		f.store.mu.Lock()
		f.store.events = append(f.store.events, "giveback "+g.receipt)
		f.store.mu.Unlock()
		f.mu.Lock()
		f.givebacks = append(f.givebacks, g)
		f.mu.Unlock()
		fmt.Fprintf(w, `{"tag":%q,"given_back":true}`, tag)
	case r.Method == "GET" && path == "/v1/snowflake":
		count, _ := strconv.Atoi(q.Get("count"))
		s := f.store
		s.mu.Lock()
		ids := make([]string, count)
		for i := range ids {
			ids[i] = strconv.FormatUint(s.flake, 10)
			s.flake++
		}
		s.mu.Unlock()
		f.mu.Lock()
		f.flakeCalls++
		f.mu.Unlock()
		if numbersOnly {
			fmt.Fprintf(w, `{"count":%d,"ids":[%s]}`, count, strings.Join(ids, ","))
		} else {
			fmt.Fprintf(w, `{"count":%d,"ids":[%s],"ids_str":["%s"]}`, count, strings.Join(ids, ","), strings.Join(ids, `","`))
		}
	default:
		writeErr(w, 404, "no route", "")
	}
}

// refusedAddr is a port nothing listens on.
func refusedAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// clock is a clock the tests move by hand.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Unix(1_800_000_000, 0)} }

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *clock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// waitFor polls cond for up to 3 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func (f *fake) waitRanges(t *testing.T, n int) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%d ranges at %s", n, f.URL), func() bool {
		r, _, _, _ := f.snapshot()
		return len(r) >= n
	})
}
