package compileserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// Messages between a Pool and its worker processes, on the worker's
// inherited pipes (not its standard streams, which carry its log).
const (
	// msgWorkerHello is the worker's first frame: its compiler's identity.
	msgWorkerHello byte = 16
	// msgWork is a compile: a PCH flag (uvarint 0 or 1), then a request.
	msgWork byte = 17
	// msgWorkReply is the worker's reply to msgWork.
	msgWorkReply byte = 18
)

// ServeWorker runs one worker process of a Pool: it announces comp's
// identity on w, then compiles each request read from r, in the request's
// working directory, and answers on w, until r ends (the server closed the
// pipe or died). A compile that fails is answered StatusFailed; only a
// broken pipe or a malformed frame ends the worker with an error.
func ServeWorker(ctx context.Context, r io.Reader, w io.Writer, comp Compiler) error {
	if err := writeFrame(w, msgWorkerHello, []byte(comp.Identity())); err != nil {
		return fmt.Errorf("compileserver: worker hello: %w", err)
	}
	for {
		typ, p, err := readFrame(r)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("compileserver: worker: %w", err)
		}
		if typ != msgWork {
			return fmt.Errorf("%w: worker got message type %d", ErrProtocol, typ)
		}
		pch, req, err := decodeWork(p)
		if err != nil {
			return err
		}
		if err := writeFrame(w, msgWorkReply, encodeReply(workOne(ctx, comp, req, pch))); err != nil {
			return fmt.Errorf("compileserver: worker reply: %w", err)
		}
	}
}

// workOne compiles req in its working directory. The worker compiles one
// request at a time, so changing the process's directory races with
// nothing.
func workOne(ctx context.Context, comp Compiler, req *Request, pch bool) *Reply {
	if req.WorkDir != "" {
		if err := os.Chdir(req.WorkDir); err != nil {
			return &Reply{Status: StatusFailed, Message: fmt.Sprintf("the client's working directory: %v", err)}
		}
	}
	start := time.Now()
	reply, err := comp.Compile(ctx, req, pch)
	if err != nil {
		return &Reply{Status: StatusFailed, Message: err.Error()}
	}
	reply.Compile = time.Since(start)
	return reply
}

func encodeWork(r *Request, pch bool) []byte {
	flag := byte(0)
	if pch {
		flag = 1
	}
	return append([]byte{flag}, encodeRequest(r)...)
}

func decodeWork(p []byte) (bool, *Request, error) {
	if len(p) == 0 || p[0] > 1 {
		return false, nil, fmt.Errorf("%w: work without its PCH flag", ErrProtocol)
	}
	req, err := decodeRequest(p[1:])
	return p[0] == 1, req, err
}
