//! `PreflightView`: the classifier's view of the `hrr preflight --json`
//! report (DESIGN §3.1) it is given: the verdict, and the capture metadata
//! as the preflight read it, which fills in what the archive summary lacks.
//! Every field is optional and a value of the wrong type reads as absent,
//! so a partial report, or one from a script, still loads.

use serde::de::{DeserializeOwned, Deserializer};
use serde::Deserialize;
use serde_json::Value;

use crate::preflight::Status;

/// The parts of a preflight report the classifier reads.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub(crate) struct PreflightView {
    /// The overall answer; `blocked` explains a missing replay.
    #[serde(deserialize_with = "lenient")]
    pub status: Option<Status>,
    /// The report's `capture` section.
    #[serde(deserialize_with = "lenient")]
    pub capture: Option<PreflightCapture>,
}

/// The `capture` section of a preflight report.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub(crate) struct PreflightCapture {
    /// The capture's HIP runtime version.
    #[serde(deserialize_with = "lenient")]
    pub hip_runtime_version: Option<String>,
    /// The capture's comgr version.
    #[serde(deserialize_with = "lenient")]
    pub comgr_version: Option<String>,
    /// GPUs the capture's runtime enumerated.
    #[serde(deserialize_with = "lenient")]
    pub device_count: Option<u64>,
    /// The devices, in manifest order; entries that are not device objects
    /// are skipped.
    #[serde(deserialize_with = "lenient_list")]
    pub devices: Vec<PreflightDevice>,
}

/// One `capture.devices[]` entry.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub(crate) struct PreflightDevice {
    /// Raw `gcn_arch_name`.
    #[serde(deserialize_with = "lenient")]
    pub gcn_arch_name: Option<String>,
}

impl PreflightView {
    /// The view of `report`; anything but an object is an empty view.
    pub fn of(report: &Value) -> PreflightView {
        PreflightView::deserialize(report).unwrap_or_default()
    }

    /// The preflight found the replay cannot be faithful.
    pub fn blocked(&self) -> bool {
        self.status == Some(Status::Blocked)
    }

    /// The first arch among the capture's devices.
    pub fn first_arch(&self) -> Option<&str> {
        self.capture
            .as_ref()?
            .devices
            .iter()
            .find_map(|d| d.gcn_arch_name.as_deref())
    }
}

/// A value of type `T`, or `None` when it has another type.
fn lenient<'de, D: Deserializer<'de>, T: DeserializeOwned>(d: D) -> Result<Option<T>, D::Error> {
    Ok(T::deserialize(Value::deserialize(d)?).ok())
}

/// The entries of a list that are `T`s; a list of none when it is no list.
fn lenient_list<'de, D: Deserializer<'de>, T: DeserializeOwned>(d: D) -> Result<Vec<T>, D::Error> {
    let Value::Array(items) = Value::deserialize(d)? else {
        return Ok(Vec::new());
    };
    Ok(items
        .into_iter()
        .filter(Value::is_object)
        .filter_map(|v| T::deserialize(v).ok())
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_the_report_shape_and_skips_what_does_not_fit() {
        let v = PreflightView::of(&json!({
            "status": "blocked",
            "capture": {"metadata": true, "hip_runtime_version": "7.2.53211", "comgr_version": 2.8,
                        "device_count": 2,
                        "devices": ["junk", {"ordinal": 0}, {"ordinal": 1, "gcn_arch_name": "gfx942:sramecc+:xnack-"}]},
            "host": null, "blocks": ["more capture GPUs than the host has"], "confirms": [], "warnings": [], "notes": []
        }));
        assert!(v.blocked());
        let c = v.capture.as_ref().unwrap();
        assert_eq!(c.hip_runtime_version.as_deref(), Some("7.2.53211"));
        assert_eq!(c.comgr_version, None, "a number is not the report's text");
        assert_eq!(c.device_count, Some(2));
        assert_eq!(v.first_arch(), Some("gfx942:sramecc+:xnack-"));
    }

    #[test]
    fn anything_else_is_an_empty_view() {
        assert_eq!(PreflightView::of(&json!("ok")), PreflightView::default());
        let v = PreflightView::of(&json!({"status": "maybe", "capture": "none"}));
        assert!(!v.blocked());
        assert_eq!(v.capture, None);
        assert_eq!(
            PreflightView::of(&json!({"status": "ok"})).status,
            Some(Status::Ok)
        );
    }
}
