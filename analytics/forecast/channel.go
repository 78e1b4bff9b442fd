package forecast

import "math"

// ChannelHistory is one channel's weekly demand; every channel of a call covers the same weeks.
type ChannelHistory struct {
	Channel string    `json:"channel"`
	Values  []float64 `json:"values"` // NaN = missing (counted as zero when others have data)
}

// ChannelShare is a channel's projected share of the total for each forecast week.
type ChannelShare struct {
	Channel string    `json:"channel"`
	Shares  []float64 `json:"shares"`
}

// ShareDamping is the weekly damping of a share's trend: the projected change fades so that a
// trend never runs a share to 0 or 1 on its own.
const ShareDamping = 0.9

// ChannelShares projects each channel's share of the total demand for horizon weeks. The shares
// of the last window weeks with demand (default 26 when window <= 0) get a least-squares line
// weighted by each week's total; a share is projected as the line's last value plus its slope,
// damped by ShareDamping per week, floored at zero, and all shares are rescaled to sum to 1.
// Without any demand the shares are equal.
func ChannelShares(history []ChannelHistory, horizon, window int) []ChannelShare {
	if window <= 0 {
		window = 26
	}
	out := make([]ChannelShare, len(history))
	n := 0
	for _, h := range history {
		n = max(n, len(h.Values))
	}
	total := make([]float64, n)
	for _, h := range history {
		for t, v := range h.Values {
			if !math.IsNaN(v) {
				total[t] += v
			}
		}
	}
	var weeks []int // last window weeks with demand
	for t := n - 1; t >= 0 && len(weeks) < window; t-- {
		if total[t] > 0 {
			weeks = append(weeks, t)
		}
	}
	levels, slopes := make([]float64, len(history)), make([]float64, len(history))
	for c, h := range history {
		var sw, sx, sy, sxx, sxy float64
		for _, t := range weeks {
			v := 0.0
			if t < len(h.Values) && !math.IsNaN(h.Values[t]) {
				v = h.Values[t]
			}
			w, x, y := total[t], float64(t), v/total[t]
			sw, sx, sy, sxx, sxy = sw+w, sx+w*x, sy+w*y, sxx+w*x*x, sxy+w*x*y
		}
		if sw == 0 {
			continue
		}
		mx, my := sx/sw, sy/sw
		if den := sxx/sw - mx*mx; den > 1e-12 && len(weeks) >= 3 {
			slopes[c] = (sxy/sw - mx*my) / den
		}
		levels[c] = my + slopes[c]*(float64(weeks[0])-mx)
	}
	damp := 0.0
	for c := range out {
		out[c] = ChannelShare{Channel: history[c].Channel, Shares: make([]float64, horizon)}
	}
	for h := range horizon {
		damp = damp*ShareDamping + ShareDamping // Σ_{i=1..h+1} φ^i
		sum := 0.0
		for c := range out {
			v := max(levels[c]+slopes[c]*damp, 0)
			out[c].Shares[h] = v
			sum += v
		}
		for c := range out {
			if sum > 0 {
				out[c].Shares[h] /= sum
			} else {
				out[c].Shares[h] = 1 / float64(len(out))
			}
		}
	}
	return out
}

// ChannelForecast is a total forecast's part for one channel.
type ChannelForecast struct {
	Channel string   `json:"channel"`
	Periods []Period `json:"periods"`
}

// SplitByChannel splits forecast periods by channel shares (from ChannelShares): each channel
// gets its share of the baseline, quantity and interval bounds, so the channels' quantities
// add up to the total. Weeks past a share list's end use its last share.
func SplitByChannel(periods []Period, shares []ChannelShare) []ChannelForecast {
	out := make([]ChannelForecast, len(shares))
	for c, sh := range shares {
		out[c] = ChannelForecast{Channel: sh.Channel, Periods: make([]Period, len(periods))}
		for i, p := range periods {
			f := 0.0
			if len(sh.Shares) > 0 {
				f = sh.Shares[min(i, len(sh.Shares)-1)]
			}
			q := p
			q.Baseline, q.Quantity, q.Lower, q.Upper = p.Baseline*f, p.Quantity*f, p.Lower*f, p.Upper*f
			out[c].Periods[i] = q
		}
	}
	return out
}
