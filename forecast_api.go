package supplyplan

import (
	"context"
	"time"
)

// Date is a calendar date rendered as "2006-01-02".
type Date time.Time

// MarshalJSON renders the date.
func (d Date) MarshalJSON() ([]byte, error) {
	return []byte(`"` + time.Time(d).UTC().Format("2006-01-02") + `"`), nil
}

// UnmarshalJSON parses a date or date-time.
func (d *Date) UnmarshalJSON(b []byte) error {
	if len(b) < 2 || b[0] != '"' {
		return Invalid("date", "must be an ISO date string")
	}
	t, ok := parseTimeAny(string(b[1 : len(b)-1])) // also stored dates: no input range
	if !ok {
		return Invalid("date", "must be an ISO date")
	}
	*d = Date(t)
	return nil
}

// ForecastQuery is GET /api/forecast.
type ForecastQuery struct {
	ProductMasterID string
	LocationID      string
	Channel         string
	HorizonWeeks    int
	ScenarioID      string
	// AsOf restricts the history to weeks before AsOf's week; the forecast starts at that week.
	AsOf     time.Time
	Interval float64
	Model    string
	// Point is the forecast statistic: median (default), mean or mape (an extension).
	Point string
	// Transform (extension) is auto (default), none or log: forecast on log demand or not.
	Transform string
	// NoEvents (extension, events=none) forecasts the history as it is, without any event: no
	// de-lifting of past event weeks, no lift on future ones.
	NoEvents bool
	Limit    int
	Offset   int
}

// Forecast limits.
const (
	DefaultHorizonWeeks = 13
	MaxHorizonWeeks     = 104
	MaxForecastPage     = 1000
)

// PeriodEvent is an event's part in a forecast week.
type PeriodEvent struct {
	ID       string  `json:"id"`
	Type     string  `json:"type"`
	Mechanic string  `json:"mechanic,omitempty"`
	LiftPct  float64 `json:"liftPct"`
	// Weight is the share of the full-week lift applied (days overlapped / 7 × intensity).
	Weight  float64 `json:"weight"`
	Learned bool    `json:"learned"`
	// Level says where a learned lift comes from (series, product+location, product, location,
	// org, prior).
	Level string `json:"level,omitempty"`
	// Included is false when the scenario leaves this event out (it then does not change the week).
	Included bool `json:"included"`
}

// ForecastPeriod is one forecast week.
type ForecastPeriod struct {
	WeekStarting Date          `json:"weekStarting"`
	Baseline     Quantity      `json:"baseline"`
	Quantity     Quantity      `json:"quantity"`
	Lower        Quantity      `json:"lower"`
	Upper        Quantity      `json:"upper"`
	Events       []PeriodEvent `json:"events"`
}

// ForecastAccuracy is the rolling-origin backtest of a series; nil metrics are undefined.
type ForecastAccuracy struct {
	WAPE   *float64 `json:"wape"`
	MASE   *float64 `json:"mase"`
	Bias   *float64 `json:"bias"`
	SMAPE  *float64 `json:"smape"`
	MAPE   *float64 `json:"mape"`
	Window int      `json:"window"`
	Points int      `json:"points"`
}

// SeriesForecastView is one series of GET /api/forecast.
type SeriesForecastView struct {
	ProductMasterID string           `json:"productMasterId"`
	LocationID      string           `json:"locationId"`
	Channel         string           `json:"channel"`
	Model           string           `json:"model"`
	Class           string           `json:"demandClass,omitempty"`
	Periods         []ForecastPeriod `json:"periods"`
	Accuracy        ForecastAccuracy `json:"accuracy"`
	// HistoryWeeks is how many weeks of history the forecast used.
	HistoryWeeks int `json:"historyWeeks"`
}

// ForecastResponse is GET /api/forecast.
type ForecastResponse struct {
	Forecasts    []SeriesForecastView `json:"forecasts"`
	HorizonWeeks int                  `json:"horizonWeeks"`
	Interval     float64              `json:"interval"`
	ScenarioID   string               `json:"scenarioId,omitempty"`
	AsOf         *Date                `json:"asOf,omitempty"`
	GeneratedAt  time.Time            `json:"generatedAt"`
	Total        int                  `json:"total"`
	Limit        int                  `json:"limit"`
	Offset       int                  `json:"offset"`
}

// GenerateScenarioInput is POST /api/forecast/scenarios/[id]/generate.
type GenerateScenarioInput struct {
	HorizonWeeks *int `json:"horizonWeeks"`
	// AsOf (extension) generates the version as of a past date: history before its week only, the
	// first forecast week being its week. Backfilled versions let accuracy be measured at once.
	AsOf             *string   `json:"asOf" max:"200"`
	ProductMasterIDs *[]string `json:"productMasterIds" max:"200"`
	LocationIDs      *[]string `json:"locationIds" max:"200"`
}

// WeekTotal is one week of a total over many series.
type WeekTotal struct {
	WeekStarting Date     `json:"weekStarting"`
	Baseline     Quantity `json:"baseline"`
	Quantity     Quantity `json:"quantity"`
	Lower        Quantity `json:"lower"`
	Upper        Quantity `json:"upper"`
}

// VersionSeries is one series of a stored forecast version.
type VersionSeries struct {
	SKU      string    `json:"s"`
	Location string    `json:"l"`
	Quantity []float64 `json:"q"`
	Baseline []float64 `json:"b"`
}

// ForecastVersion is a stored scenario forecast (the result of generate).
type ForecastVersion struct {
	ID            string          `json:"id"`
	ScenarioID    string          `json:"scenarioId"`
	GeneratedAt   time.Time       `json:"generatedAt"`
	GeneratedBy   string          `json:"generatedBy"`
	Start         time.Time       `json:"start"` // Monday of the first week
	HorizonWeeks  int             `json:"horizonWeeks"`
	TotalQuantity Quantity        `json:"totalQuantity"`
	TotalBaseline Quantity        `json:"totalBaseline"`
	Weekly        []WeekTotal     `json:"weekly"`
	Series        []VersionSeries `json:"series"`
}

// GenerateScenarioResult is the answer of generate.
type GenerateScenarioResult struct {
	Success       bool        `json:"success"`
	ScenarioID    string      `json:"scenarioId"`
	VersionID     string      `json:"versionId"`
	GeneratedAt   time.Time   `json:"generatedAt"`
	HorizonWeeks  int         `json:"horizonWeeks"`
	SeriesCount   int         `json:"seriesCount"`
	TotalQuantity Quantity    `json:"totalQuantity"`
	TotalBaseline Quantity    `json:"totalBaseline"`
	PreviousTotal *Quantity   `json:"previousTotal"`
	Delta         *Quantity   `json:"delta"`
	Weekly        []WeekTotal `json:"weekly"`
	Status        string      `json:"scenarioStatus"`
}

// CompareInput is POST /api/forecast/scenarios/compare.
type CompareInput struct {
	ScenarioIDs     *[]string `json:"scenarioIds" max:"200"`
	HorizonWeeks    *int      `json:"horizonWeeks"`
	ProductMasterID *string   `json:"productMasterId" max:"200"`
	LocationID      *string   `json:"locationId" max:"200"`
}

// ScenarioComparison is one scenario of a comparison.
type ScenarioComparison struct {
	ScenarioID    string      `json:"scenarioId"`
	Name          string      `json:"name"`
	Type          string      `json:"type"`
	Status        string      `json:"status"`
	TotalQuantity Quantity    `json:"totalQuantity"`
	TotalBaseline Quantity    `json:"totalBaseline"`
	Weekly        []WeekTotal `json:"weekly"`
	// DeltaVsFirst compares with the first scenario of the request (zero for it).
	DeltaVsFirst       Quantity   `json:"deltaVsFirst"`
	DeltaPctVsFirst    *float64   `json:"deltaPctVsFirst"`
	WeeklyDeltaVsFirst []Quantity `json:"weeklyDeltaVsFirst"`
}

// CompareResult is the answer of compare.
type CompareResult struct {
	HorizonWeeks int                  `json:"horizonWeeks"`
	SeriesCount  int                  `json:"seriesCount"`
	Scenarios    []ScenarioComparison `json:"scenarios"`
	GeneratedAt  time.Time            `json:"generatedAt"`
}

// Change types of the forecast change history.
const (
	ChangeGenerate     = "GENERATE"
	ChangePublish      = "PUBLISH"
	ChangeEventCreated = "EVENT_CREATED"
	ChangeEventUpdated = "EVENT_UPDATED"
	ChangeEventDeleted = "EVENT_DELETED"
)

// ChangeEntry is one forecast change.
type ChangeEntry struct {
	ID              string    `json:"id"`
	ChangeType      string    `json:"changeType"`
	ScenarioID      string    `json:"scenarioId,omitempty"`
	EventID         string    `json:"eventId,omitempty"`
	ProductMasterID string    `json:"productMasterId,omitempty"`
	LocationID      string    `json:"locationId,omitempty"`
	Actor           string    `json:"actor"`
	PreviousTotal   *Quantity `json:"previousTotal"`
	NewTotal        *Quantity `json:"newTotal"`
	Delta           *Quantity `json:"delta"`
	HorizonWeeks    int       `json:"horizonWeeks,omitempty"`
	SeriesCount     int       `json:"seriesCount,omitempty"`
	Reason          string    `json:"reason"`
	CreatedAt       time.Time `json:"createdAt"`
	// EffectStatus (event entries only) says where the forecast figures stand: PENDING when the
	// entry was written with the event change and previousTotal, newTotal, delta and seriesCount
	// are still being computed (they arrive in a later update of the same entry), COMPUTED,
	// OUTSIDE_HORIZON (the event, before and after the change, lies outside the entry's forecast
	// weeks: delta 0) or NO_HISTORY (no series in the event's scope has demand history: delta 0).
	EffectStatus string `json:"effectStatus,omitempty"`
	// UpdatedAt is when the figures of a PENDING entry arrived.
	UpdatedAt *time.Time `json:"updatedAt,omitempty"`
	// Pending is what computing the figures needs, kept (journaled) until they are in; never
	// rendered.
	Pending *PendingEffect `json:"pending,omitempty"`
}

// Effect statuses of an event's change-history entry.
const (
	EffectPending        = "PENDING"
	EffectComputed       = "COMPUTED"
	EffectOutsideHorizon = "OUTSIDE_HORIZON"
	EffectNoHistory      = "NO_HISTORY"
)

// PendingEffect is the event as it was before a change (nil: created) and after it (nil:
// deleted).
type PendingEffect struct {
	Old *ExternalEvent `json:"old,omitempty"`
	New *ExternalEvent `json:"new,omitempty"`
}

// ChangeFilter selects change-history entries.
type ChangeFilter struct {
	ScenarioID, ProductMasterID, LocationID string
	From, To                                time.Time
	Page, Limit                             int
}

// ChannelProjection is GET /api/forecast/channel-projection.
type ChannelProjection struct {
	ProductMasterID string              `json:"productMasterId,omitempty"`
	LocationID      string              `json:"locationId,omitempty"`
	HorizonWeeks    int                 `json:"horizonWeeks"`
	Total           []WeekTotal         `json:"total"`
	Channels        []ChannelProjSeries `json:"channels"`
	GeneratedAt     time.Time           `json:"generatedAt"`
}

// ChannelProjSeries is one channel's projection.
type ChannelProjSeries struct {
	Channel string            `json:"channel"`
	Periods []ChannelProjWeek `json:"periods"`
	Total   Quantity          `json:"totalQuantity"`
}

// ChannelProjWeek is one week of a channel's projection.
type ChannelProjWeek struct {
	WeekStarting Date     `json:"weekStarting"`
	Share        float64  `json:"share"`
	Quantity     Quantity `json:"quantity"`
	Lower        Quantity `json:"lower"`
	Upper        Quantity `json:"upper"`
}

// LongTermForecast is GET /api/forecast/long-term.
type LongTermForecast struct {
	ProductMasterID string           `json:"productMasterId,omitempty"`
	LocationID      string           `json:"locationId,omitempty"`
	HorizonMonths   int              `json:"horizonMonths"`
	Granularity     string           `json:"granularity"`
	Model           string           `json:"model"`
	Interval        float64          `json:"interval"`
	Buckets         []LongTermBucket `json:"buckets"`
	GeneratedAt     time.Time        `json:"generatedAt"`
}

// LongTermBucket is one month or quarter.
type LongTermBucket struct {
	Period   string   `json:"period"` // 2027-01 or 2027-Q1
	Start    Date     `json:"start"`
	End      Date     `json:"end"`
	Baseline Quantity `json:"baseline"`
	Quantity Quantity `json:"quantity"`
	Lower    Quantity `json:"lower"`
	Upper    Quantity `json:"upper"`
	Partial  bool     `json:"partial"`
}

// AccuracyQuery is GET /api/forecast/accuracy.
type AccuracyQuery struct {
	WindowWeeks     int
	ProductMasterID string
	LocationID      string
	Channel         string
	ScenarioID      string
}

// AccuracyMetrics are forecast-versus-actual figures of a group.
type AccuracyMetrics struct {
	ProductMasterID string   `json:"productMasterId,omitempty"`
	LocationID      string   `json:"locationId,omitempty"`
	Channel         string   `json:"channel,omitempty"`
	WAPE            *float64 `json:"wape"`
	MAPE            *float64 `json:"mape"`
	Bias            *float64 `json:"bias"`
	MASE            *float64 `json:"mase"`
	Points          int      `json:"points"`
	Actual          Quantity `json:"actualTotal"`
	Forecast        Quantity `json:"forecastTotal"`
}

// AccuracyReport is the answer of GET /api/forecast/accuracy.
type AccuracyReport struct {
	WindowWeeks int               `json:"windowWeeks"`
	From        Date              `json:"from"`
	To          Date              `json:"to"`
	Versions    int               `json:"versionsUsed"`
	Overall     AccuracyMetrics   `json:"overall"`
	ByProduct   []AccuracyMetrics `json:"byProduct"`
	ByLocation  []AccuracyMetrics `json:"byLocation"`
	ByChannel   []AccuracyMetrics `json:"byChannel"`
}

// EventLiftReport is GET /api/forecast/events/[id]/lift.
type EventLiftReport struct {
	EventID          string          `json:"eventId"`
	Type             string          `json:"type"`
	Status           string          `json:"status"` // PENDING (no actuals yet), PARTIAL, COMPLETE
	PlannedLiftPct   *float64        `json:"plannedLiftPct"`
	Learned          bool            `json:"learned"`
	PlannedEffectPct *float64        `json:"plannedEffectPct"`
	RealisedLiftPct  *float64        `json:"realisedLiftPct"`
	SeriesCount      int             `json:"seriesCount"`
	Weeks            []EventLiftWeek `json:"weeks"`
}

// EventLiftWeek is one week of an event's lift report, summed over the series it applies to.
type EventLiftWeek struct {
	WeekStarting Date      `json:"weekStarting"`
	Base         Quantity  `json:"base"`
	Planned      Quantity  `json:"planned"`
	Actual       *Quantity `json:"actual"`
}

// ForecastService serves the forecasting endpoints beyond scenarios and events.
type ForecastService interface {
	Forecast(ctx context.Context, p Principal, q ForecastQuery) (ForecastResponse, error)
	GenerateScenario(ctx context.Context, p Principal, id string, in GenerateScenarioInput) (GenerateScenarioResult, error)
	CompareScenarios(ctx context.Context, p Principal, in CompareInput) (CompareResult, error)
	ChangeHistory(ctx context.Context, p Principal, f ChangeFilter) ([]ChangeEntry, int, error)
	ChannelProjection(ctx context.Context, p Principal, productID, locationID string, horizon int) (ChannelProjection, error)
	LongTerm(ctx context.Context, p Principal, productID, locationID string, months int, granularity string, interval float64) (LongTermForecast, error)
	Accuracy(ctx context.Context, p Principal, q AccuracyQuery) (AccuracyReport, error)
	EventLift(ctx context.Context, p Principal, eventID string) (EventLiftReport, error)
}
