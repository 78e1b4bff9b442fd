package forecast

import "math"

// DemandClass is the Syntetos-Boylan class of a series.
type DemandClass string

// Syntetos-Boylan classes: ADI (average inter-demand interval) against 1.32 and CV² (squared
// coefficient of variation of the non-zero demand sizes) against 0.49.
const (
	ClassSmooth       DemandClass = "SMOOTH"       // ADI <= 1.32, CV² <= 0.49
	ClassErratic      DemandClass = "ERRATIC"      // ADI <= 1.32, CV² > 0.49
	ClassIntermittent DemandClass = "INTERMITTENT" // ADI > 1.32, CV² <= 0.49
	ClassLumpy        DemandClass = "LUMPY"        // ADI > 1.32, CV² > 0.49
)

// Classification thresholds of Syntetos, Boylan and Croston (2005).
const (
	ADICutoff = 1.32
	CV2Cutoff = 0.49
)

// Classification is the demand pattern of a series.
type Classification struct {
	Class DemandClass `json:"class"`
	ADI   float64     `json:"adi"` // observed weeks / weeks with demand > 0 (observed weeks + 1 without demand)
	CV2   float64     `json:"cv2"` // variance / mean² of the non-zero demands (population variance)
}

// Intermittent reports whether the class calls for the intermittent-demand models.
func (c Classification) Intermittent() bool { return c.ADI > ADICutoff }

// Classify computes ADI and CV² over the observed weeks of values (NaN = missing).
func Classify(values []float64) Classification {
	return classify(values, nil)
}

func classify(y []float64, ok []bool) Classification {
	obs, nz := 0, 0
	var s, ss float64
	for i, v := range y {
		if (ok != nil && !ok[i]) || math.IsNaN(v) {
			continue
		}
		obs++
		if v > 0 {
			nz++
			s += v
			ss += v * v
		}
	}
	c := Classification{ADI: float64(obs + 1)} // no demand yet: longer than the history
	if nz > 0 {
		c.ADI = float64(obs) / float64(nz)
		m := s / float64(nz)
		c.CV2 = max(0, ss/float64(nz)-m*m) / (m * m)
	}
	switch {
	case c.ADI <= ADICutoff && c.CV2 <= CV2Cutoff:
		c.Class = ClassSmooth
	case c.ADI <= ADICutoff:
		c.Class = ClassErratic
	case c.CV2 <= CV2Cutoff:
		c.Class = ClassIntermittent
	default:
		c.Class = ClassLumpy
	}
	return c
}
