use serde_json::json;

use super::*;

fn row(seq: i64, kind: &str, changes: serde_json::Value) -> AuditRow {
    AuditRow {
        entity: "order".into(),
        record_id: "o1".into(),
        seq,
        changed_at: DateTime::from_timestamp(0, 0).unwrap_or_default(),
        kind: kind.into(),
        actor: "web".into(),
        db_role: None,
        action: None,
        request_id: None,
        trace: None,
        changes,
        encoding: Some(i64::from(crate::model::encoding::AUDIT_TEXT.number)),
        unreadable: None,
    }
}

#[test]
fn replaying_a_records_changes_gives_its_fields() {
    let rows = [
        row(
            1,
            "insert",
            json!({"customer": {"before": null, "after": "c1"}, "note": {"before": null, "after": "x"}}),
        ),
        row(2, "update", json!({"customer": {"before": "c1", "after": "c2"}})),
        row(3, "update", json!({"note": {"before": "x", "after": null}})),
    ];
    let fields = replay(&rows).ok().flatten().unwrap_or_default();
    assert_eq!(fields.get("customer"), Some(&Some("c2".to_owned())));
    assert_eq!(fields.get("note"), Some(&None));
    let deleted = [rows[0].clone(), row(2, "delete", json!({}))];
    assert_eq!(replay(&deleted), Ok(None));
    let mut unreadable = rows.to_vec();
    unreadable[1].unreadable = Some("encoding 9".into());
    assert_eq!(replay(&unreadable), Err("audit row 2 cannot be read: encoding 9".to_owned()));
}
