// Package forecast is Supplyplan's demand forecasting engine: a pure library (standard library
// and the root package only, no I/O) that turns a weekly demand history and the events around
// it into a forecast with prediction intervals, accuracy figures and event lifts. The service
// reads history and events, calls this package, and stores or serves the result.
//
// # Entry points
//
//	Forecast(s Series, events []EventOccurrence, lifts *LiftModel, opts Options) (Result, error)
//	ForecastBatch(jobs []Job, lifts *LiftModel, opts Options) ([]Result, []error) // GOMAXPROCS workers
//	LearnLifts(histories []SeriesHistory, o LiftOptions) *LiftModel            // pooled lifts and elasticities
//	RealisedLift(s Series, eventID string, events []EventOccurrence, lifts *LiftModel, opts Options) (LiftReport, error)
//	ChannelShares(history []ChannelHistory, horizon, window int) []ChannelShare
//	SplitByChannel(periods []Period, shares []ChannelShare) []ChannelForecast
//	Aggregate(r Result, grain string) ([]Bucket, error) // MONTH or QUARTER
//	Score(forecasts, actuals, history []float64) Accuracy
//	Classify(values []float64) Classification
//
// # Weeks, missing weeks and stockouts
//
// A Series holds one value per ISO week (Monday 00:00 UTC) from Start. NaN marks a missing week
// and Stockout[t] a week whose demand was censored by zero stock: neither is zero demand.
// Leading missing weeks are dropped. Smoothing models (SES, Holt, damped Holt, Holt-Winters,
// Theta's level) propagate their state through a missing week as if it had equalled its
// one-step forecast (the state-space treatment of a missing observation: level moves by the
// trend, season indices stay); counting models skip it (the mean, naive and seasonal naive use
// the last observed values, Croston/SBA do not count it in the interval between demands, TSB
// does not update its probability). Missing weeks are never scored in backtests.
//
// # Models and selection
//
// Models: naive, seasonal naive (52), mean, simple exponential smoothing, Holt, damped Holt,
// Holt-Winters additive and multiplicative (52-week season, only when two full seasons precede
// the first backtest origin), Theta (Hyndman-Billah: SES plus half the regression drift),
// Croston, SBA (Syntetos-Boylan approximation, Croston × (1 - alpha/2)) and TSB
// (Teunter-Syntetos-Babai). Parameters are fitted by minimising the in-sample one-step squared
// error (golden-section search or bounded Nelder-Mead); initial states come from the first
// observations (first four for the level, a line through the first ten for Holt, the first two
// seasons for Holt-Winters).
//
// The series is classified by Syntetos-Boylan: ADI = observed weeks / weeks with demand, CV² of
// the non-zero demands. ADI > 1.32 (intermittent or lumpy) selects among mean, SES, Croston, SBA
// and TSB, scored by mean squared error (absolute error would favour forecasting zero);
// otherwise among naive, mean, SES, Holt, damped Holt, Theta, seasonal naive and Holt-Winters,
// scored by mean absolute error (the median is what absolute error rewards).
//
// Selection is by a rolling-origin backtest, never by in-sample fit: parameters are fitted on
// the weeks before the first origin, then every one of the last Window weeks (default 52, at
// most a third of the history) is an origin from which the model forecasts 13 steps, whatever
// the horizon asked for (so that a week's forecast never depends on the horizon); all (origin,
// step) pairs with an observed target are scored. The mean of the best three models is kept when the best single model does not beat
// it by more than one standard error of the paired loss difference. The chosen model(s) are
// then refitted on the whole history to forecast.
//
// When every observed week is positive the models also run on log demand; the log and the
// plain family compete by their backtest Gaussian predictive log-likelihood on the demand scale
// (with the Jacobian of the log), so skewed, multiplicative demand gets log models.
//
// # Point forecasts
//
// Options.Point picks the statistic of the predictive distribution reported as Quantity:
// "median" (default; what MAE, MASE and WAPE reward), "mean" (what sums and MSE reward) or
// "mape" (the point minimising expected absolute percentage error: the median of the predictive
// distribution reweighted by 1/demand, exp(f - s²) for a log model with error s; it is lower
// than the median and is the right choice only when the user is judged by MAPE).
//
// # Intervals
//
// Intervals come from the backtest errors of the chosen model, which are out of sample. For
// each step h, sigma_h is the root mean squared h-step error, forced non-decreasing in h and
// grown as sqrt(h) past the backtested steps. The bounds are the empirical quantiles of all
// errors divided by their step's sigma (normal quantiles under 40 errors), times sigma_h,
// widened by the ratio of Student's t to the normal quantile for the roughly count_h / h
// independent errors behind sigma_h. Log models get multiplicative, asymmetric intervals.
// Bounds are clipped at zero, multiplied by the week's event multiplier. Levels 0.5, 0.8
// (default), 0.9 and 0.95 (any level in [0.5, 0.99]).
//
// # Accuracy
//
// Result.Accuracy scores the chosen model's backtest forecasts, event multipliers applied,
// against actual demand over the Window most recent weeks (every (origin, step) pair):
// WAPE = Σ|F-A| / Σ|A|; MASE = mean|F-A| / mean|A_t - A_{t-1}| over the history before the window
// (non-seasonal scaling); Bias = Σ(F-A) / Σ|A|; sMAPE = mean 2|F-A| / (|F|+|A|); MAPE = mean
// |F-A| / |A| over A != 0. Fractions (0.25 = 25%); a metric without denominator is nil. Lifts
// passed in were typically learned on the same history, so event weeks of the window are
// slightly in sample.
//
// # Events and lifts
//
// An EventOccurrence covers [Start, End). In each week it overlaps it weighs w = overlapping
// days / 7 × Intensity (Intensity defaults to 1): an event on 3 of the 7 days contributes 3/7 of
// its lift. Lifts of one week stack as (1 + Σ w·l over ADDITIVE events) × Π (1 + w·l over
// MULTIPLICATIVE events), floored at 0.01 (the domain's rule, supplyplan.LiftStack). The history is divided by these multipliers before
// the baseline is fitted, so promotions do not inflate it, and the forecast baseline is
// multiplied by them.
//
// An event with LiftPct uses it. Otherwise its lift is learned (AppliedEvent.Learned): events of
// the same Type and Mechanic share one effect; a PRICE_CHANGE with PriceChangePct gets
// lift = (1 + PriceChangePct)^elasticity - 1 with a learned elasticity. LearnLifts models log
// demand as a local baseline (the mean of the de-lifted log demand of the 8 weeks either side,
// the week itself left out) plus the effects, alternating baseline and effects six times, with
// Huber weights so odd weeks count less. The effects are a hierarchical Bayesian regression:
// the organization's estimate is shrunk toward the type prior (DefaultLiftPriors, a promotion
// +30%, an elasticity of -1.5, both weak), each product's and each location's toward the
// organization's, and each series' toward its product's plus its location's deviation. How
// strongly each level is shrunk (the between-group variance) is estimated from the data by the
// method of moments, so a series with one event stays near its product and location and a
// series with many events gets its own lift. LiftModel.Estimate says which level an estimate
// comes from; a class never seen answers with its prior. Forecast without a LiftModel learns
// from the series alone.
package forecast
