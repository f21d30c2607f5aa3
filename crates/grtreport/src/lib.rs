//! grtreport: joins events into GPU jobs, splits their phases and tags what blocked them
