package compileserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"

	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// ErrNoServer means no server listens on the socket.
var ErrNoServer = errors.New("compileserver: no server running")

// Client talks to the server on one socket. The zero value uses
// SocketPath().
type Client struct {
	Socket string
}

// dial connects to the server; a missing socket or a refused connection
// (a dead server's socket file) is ErrNoServer.
func (c *Client) dial(ctx context.Context) (*net.UnixConn, error) {
	path := c.Socket
	if path == "" {
		var err error
		if path, err = SocketPath(); err != nil {
			return nil, err
		}
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED) {
			return nil, fmt.Errorf("%w: %w", ErrNoServer, err)
		}
		return nil, fmt.Errorf("compileserver: %w", err)
	}
	return conn.(*net.UnixConn), nil
}

// roundTrip sends one message and reads the reply of type want. The
// connection is closed when ctx ends, so a server that hangs costs the
// caller no more than its context allows.
func (c *Client) roundTrip(ctx context.Context, typ byte, payload []byte, want byte) ([]byte, error) {
	conn, err := c.dial(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	if err := writeFrame(conn, typ, payload); err != nil {
		return nil, fmt.Errorf("compileserver: sending: %w", err)
	}
	got, reply, err := readFrame(conn)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("compileserver: the server hung up (did it crash?): %w", err)
	}
	if got != want {
		return nil, fmt.Errorf("%w: reply of type %d, want %d", ErrProtocol, got, want)
	}
	return reply, nil
}

// Compile sends r and returns the server's reply. An error means the
// server is absent, failed, or crashed: the caller compiles itself.
func (c *Client) Compile(ctx context.Context, r *Request) (*Reply, error) {
	p, err := c.roundTrip(ctx, msgCompile, encodeRequest(r), msgCompileReply)
	if err != nil {
		return nil, err
	}
	return decodeReply(p)
}

// Status returns the running server's state.
func (c *Client) Status(ctx context.Context) (*Stats, error) {
	p, err := c.roundTrip(ctx, msgStatus, nil, msgStatusReply)
	if err != nil {
		return nil, err
	}
	var st Stats
	if err := json.Unmarshal(p, &st); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrProtocol, err)
	}
	return &st, nil
}

// Stop asks the running server to exit once its compiles in flight are
// answered.
func (c *Client) Stop(ctx context.Context) error {
	_, err := c.roundTrip(ctx, msgStop, nil, msgStopReply)
	return err
}

// Start runs `bin serve --socket PATH --log PATH.log ARGS`, detached in a session of its own
// so that it outlives the caller and no terminal signal reaches it, and
// waits until it answers or ctx ends. A server that is already running
// (started by another client in the meantime) is success.
func (c *Client) Start(ctx context.Context, bin string, args ...string) error {
	path := c.Socket
	if path == "" {
		var err error
		if path, err = SocketPath(); err != nil {
			return err
		}
	}
	// The server runs in / (it moves to each client's directory per
	// compile), so a relative binary path is made absolute first.
	if abs, err := filepath.Abs(bin); err == nil && strings.ContainsRune(bin, filepath.Separator) {
		bin = abs
	}
	cmd := exec.Command(bin, append([]string{"serve", "--socket", path, "--log", path + ".log"}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.Dir = "/"
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("compileserver: starting %s serve: %w", bin, err)
	}
	exited := make(chan error, 1)
	// Reap the server when it exits, so it leaves no zombie while this
	// process lives on.
	go func() { exited <- cmd.Wait() }()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, err := (&Client{Socket: path}).Status(ctx); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("compileserver: waiting for the server: %w", ctx.Err())
		case err := <-exited:
			if err == nil {
				// It lost the race to another server (it exits 0 when
				// another holds the lock), which may not listen yet:
				// wait for that one to answer.
				exited = nil
				continue
			}
			if _, serr := (&Client{Socket: path}).Status(ctx); serr == nil {
				return nil
			}
			return fmt.Errorf("compileserver: %s serve exited: %v", bin, err)
		case <-tick.C:
		}
	}
}

// Running reports whether a server answers on the socket.
func (c *Client) Running(ctx context.Context) bool {
	_, err := c.Status(ctx)
	return err == nil
}

// Pending is a compile begun before its key was known (Begin): Finish
// sends the key and files and returns the reply; Abandon drops it.
type Pending struct {
	conn *net.UnixConn
}

// Begin sends r (its Key and Files ignored) for the server to compile
// while the caller computes its key. The caller must then call Finish, or
// Abandon when it needs no compile. An error means no server took it.
func (c *Client) Begin(ctx context.Context, r *Request) (*Pending, error) {
	conn, err := c.dial(ctx)
	if err != nil {
		return nil, err
	}
	early := *r
	early.Key, early.Files, early.FilesLater = [32]byte{}, nil, true
	if deadline, ok := ctx.Deadline(); ok {
		conn.SetWriteDeadline(deadline)
	}
	if err := writeFrame(conn, msgCompile, encodeRequest(&early)); err != nil {
		conn.Close()
		return nil, fmt.Errorf("compileserver: sending: %w", err)
	}
	conn.SetWriteDeadline(time.Time{})
	return &Pending{conn: conn}, nil
}

// Finish sends the key's digest and files of the compile p began, and
// returns the server's reply, as Compile does.
func (p *Pending) Finish(ctx context.Context, key [32]byte, files []File) (*Reply, error) {
	defer p.conn.Close()
	stop := context.AfterFunc(ctx, func() { p.conn.Close() })
	defer stop()
	if err := writeFrame(p.conn, msgFiles, encodeFiles(key, files)); err != nil {
		return nil, fmt.Errorf("compileserver: sending: %w", err)
	}
	typ, payload, err := readFrame(p.conn)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("compileserver: the server hung up (did it crash?): %w", err)
	}
	if typ != msgCompileReply {
		return nil, fmt.Errorf("%w: reply of type %d, want %d", ErrProtocol, typ, msgCompileReply)
	}
	return decodeReply(payload)
}

// Abandon tells the server the compile p began is not needed.
func (p *Pending) Abandon() { p.conn.Close() }
