package supplyplan

import "encoding/json"

// Hand-written encodings of the loop runtime's records (record_json.go): every transition
// journals its instance, its audit event, its outbound event and the month's usage, and answers
// with the instance, so these are written once per transition. Each writes exactly what
// encoding/json writes (TestEncodeLoopRecordsSameBytes) or reports false, and the caller then
// uses encoding/json.

// AppendLoopInstanceJSON appends in as json.Marshal writes it; false when it cannot (the caller
// then marshals it).
func AppendLoopInstanceJSON(b []byte, in *LoopInstance) ([]byte, bool) { return in.appendJSON(b) }

// rawJSON writes a json.RawMessage field that is not empty: as is when encoding/json would copy
// it unchanged (valid JSON, no whitespace outside strings, none of the characters it escapes:
// <, >, &, U+2028, U+2029); otherwise the value fails (false).
func (w *jsonWriter) rawJSON(m json.RawMessage) {
	if !w.ok {
		return
	}
	in := false
	for i := 0; i < len(m); i++ {
		c := m[i]
		switch {
		case c == '<' || c == '>' || c == '&' || c == 0xE2: // 0xE2 starts U+2028 and U+2029 (and others: refused too)
			w.ok = false
			return
		case in && c == '\\':
			i++
		case c == '"':
			in = !in
		case !in && (c == ' ' || c == '\t' || c == '\n' || c == '\r'):
			w.ok = false
			return
		}
	}
	if !json.Valid(m) {
		w.ok = false
		return
	}
	w.b = append(w.b, m...)
}

// marshal writes v through encoding/json (for the parts that are rare on the hot path): the same
// bytes as v nested in a value json.Marshal encodes.
func (w *jsonWriter) marshal(v any) {
	if !w.ok {
		return
	}
	b, err := json.Marshal(v)
	if err != nil {
		w.ok = false
		return
	}
	w.b = append(w.b, b...)
}

func (w *jsonWriter) loopActor(a LoopActor) {
	w.raw(`{"type":`)
	w.str(a.Type)
	w.raw(`,"sub":`)
	w.str(a.Sub)
	if a.Iss != "" {
		w.raw(`,"iss":`)
		w.str(a.Iss)
	}
	if a.Jti != "" {
		w.raw(`,"jti":`)
		w.str(a.Jti)
	}
	w.raw("}")
}

func (in *LoopInstance) appendJSON(b []byte) ([]byte, bool) {
	if in == nil {
		return append(b, "null"...), true
	}
	w := jsonWriter{b: b, ok: true}
	w.raw(`{"id":`)
	w.str(in.ID)
	w.raw(`,"organizationId":`)
	w.str(in.OrganizationID)
	w.raw(`,"loop":`)
	w.str(in.Loop)
	w.raw(`,"loopVersion":`)
	w.str(in.LoopVersion)
	w.raw(`,"definitionDigest":`)
	w.str(in.DefinitionDigest)
	w.raw(`,"domain":`)
	w.str(string(in.Domain))
	w.raw(`,"businessKey":`)
	w.str(in.BusinessKey)
	w.raw(`,"status":`)
	w.str(string(in.Status))
	w.raw(`,"state":`)
	w.str(in.State)
	w.raw(`,"version":`)
	w.int(in.Version)
	if len(in.Input) > 0 {
		w.raw(`,"input":`)
		w.rawJSON(in.Input)
	}
	if in.Subject != nil {
		w.raw(`,"subject":`)
		w.marshal(in.Subject)
	}
	if in.TimerDueAt != nil {
		w.raw(`,"timerDueAt":`)
		w.time(*in.TimerDueAt)
	}
	if in.TimerTransition != "" {
		w.raw(`,"timerTransition":`)
		w.str(in.TimerTransition)
	}
	if in.TimerRemainingMs != 0 {
		w.raw(`,"timerRemainingMs":`)
		w.int(in.TimerRemainingMs)
	}
	if len(in.Effects) > 0 {
		w.raw(`,"effects":`)
		w.marshal(in.Effects)
	}
	w.raw(`,"lastSeq":`)
	w.int(in.LastSeq)
	w.raw(`,"lastHash":`)
	w.str(in.LastHash)
	w.raw(`,"startedBy":`)
	w.loopActor(in.StartedBy)
	w.raw(`,"createdAt":`)
	w.time(in.CreatedAt)
	w.raw(`,"updatedAt":`)
	w.time(in.UpdatedAt)
	if in.ClosedAt != nil {
		w.raw(`,"closedAt":`)
		w.time(*in.ClosedAt)
	}
	if in.CloseReason != "" {
		w.raw(`,"closeReason":`)
		w.str(in.CloseReason)
	}
	w.raw("}")
	return w.b, w.ok
}

func (w *jsonWriter) loopEvent(e *LoopEvent) {
	w.raw(`{"seq":`)
	w.int(e.Seq)
	w.raw(`,"instanceId":`)
	w.str(e.InstanceID)
	w.raw(`,"type":`)
	w.str(e.Type)
	w.raw(`,"from":`)
	w.str(e.From)
	w.raw(`,"to":`)
	w.str(e.To)
	if e.Transition != "" {
		w.raw(`,"transition":`)
		w.str(e.Transition)
	}
	w.raw(`,"status":`)
	w.str(string(e.Status))
	w.raw(`,"actor":`)
	w.loopActor(e.Actor)
	if e.Reason != "" {
		w.raw(`,"reason":`)
		w.str(e.Reason)
	}
	if e.RequestID != "" {
		w.raw(`,"requestId":`)
		w.str(e.RequestID)
	}
	if e.IdempotencyKey != "" {
		w.raw(`,"idempotencyKey":`)
		w.str(e.IdempotencyKey)
	}
	w.raw(`,"definitionDigest":`)
	w.str(e.DefinitionDigest)
	w.raw(`,"occurredAt":`)
	w.time(e.OccurredAt)
	if len(e.Payload) > 0 {
		w.raw(`,"payload":`)
		w.rawJSON(e.Payload)
	}
	w.raw(`,"prevHash":`)
	w.str(e.PrevHash)
	w.raw(`,"hash":`)
	w.str(e.Hash)
	w.raw("}")
}

func (e *LoopEvent) appendJSON(b []byte) ([]byte, bool) {
	if e == nil {
		return append(b, "null"...), true
	}
	w := jsonWriter{b: b, ok: true}
	w.loopEvent(e)
	return w.b, w.ok
}

// loopEventData writes the data of an outbound loop event.
func (w *jsonWriter) loopEventData(d *LoopEventData) {
	w.raw(`{"instanceId":`)
	w.str(d.InstanceID)
	w.raw(`,"loop":`)
	w.str(d.Loop)
	w.raw(`,"loopVersion":`)
	w.str(d.LoopVersion)
	w.raw(`,"businessKey":`)
	w.str(d.BusinessKey)
	w.raw(`,"status":`)
	w.str(string(d.Status))
	w.raw(`,"state":`)
	w.str(d.State)
	w.raw(`,"version":`)
	w.int(d.Version)
	w.raw(`,"event":`)
	w.loopEvent(&d.Event)
	w.raw("}")
}

func (u *LoopUsage) appendJSON(b []byte) ([]byte, bool) {
	if u == nil {
		return append(b, "null"...), true
	}
	w := jsonWriter{b: b, ok: true}
	w.raw(`{"period":`)
	w.str(u.Period)
	w.raw(`,"transitions":`)
	w.int(u.Transitions)
	if len(u.Reached) > 0 {
		w.raw(`,"reached":[`)
		for i, r := range u.Reached {
			if i > 0 {
				w.raw(",")
			}
			w.int(int64(r))
		}
		w.raw("]")
	}
	w.raw("}")
	return w.b, w.ok
}

// appendJSON of a resolution: the body of every resolve (GET /v1/loops/{name}/resolve), up to
// MaxLoopCandidates version strings, where encoding/json's reflection was the largest cost of the
// handler once the resolution itself was memoized (LoopView.Resolve).
func (r LoopResolution) appendJSON(b []byte) ([]byte, bool) {
	w := jsonWriter{b: b, ok: true}
	w.raw(`{"name":`)
	w.str(r.Name)
	w.raw(`,"version":`)
	w.str(r.Version)
	w.raw(`,"digest":`)
	w.str(r.Digest)
	w.raw(`,"integrity":`)
	w.str(r.Integrity)
	w.raw(`,"deprecated":`)
	if r.Deprecated == nil {
		w.raw("null")
	} else {
		w.str(*r.Deprecated)
	}
	w.raw(`,"candidates":`)
	w.strs(r.Candidates)
	w.optStr(`,"range":`, r.Range)
	w.optStr(`,"tag":`, r.Tag)
	w.raw("}")
	return w.b, w.ok
}
