package actors

// stackPad is the frame warmStack asks for: with what sits below it, it takes a new goroutine's
// stack to 8 KiB, more than an event write's transaction uses.
const stackPad = 4 << 10

// warmStack grows the running goroutine's stack before a transaction goes deep. hollywood runs an
// actor's messages on a goroutine it starts when the mailbox turns busy and that ends when the
// mailbox is drained (under 64 concurrent writers, about one per two writes), and a new goroutine
// starts with a small stack that an event write's transaction outgrew ten frames down, in
// time.Now: growing a stack copies it and walks every frame on it, ~4% of the write's CPU there.
// Grown here, six frames from the goroutine's start, the walk is short; on a goroutine whose
// stack is large enough already the call costs clearing its frame.
//
//go:noinline
func warmStack(i int) byte {
	var pad [stackPad]byte
	return pad[i&(stackPad-1)]
}
