use super::*;

#[test]
fn rollouts_parse_and_refuse_nonsense() {
    assert_eq!(Rollout::parse("on"), Ok(Rollout::On));
    assert_eq!(Rollout::parse("off"), Ok(Rollout::Off));
    assert_eq!(Rollout::parse("25%"), Ok(Rollout::Percent(25)));
    assert_eq!(Rollout::parse("100"), Ok(Rollout::Percent(100)));
    for bad in ["101%", "-1", "half", "", "2.5%"] {
        assert!(Rollout::parse(bad).is_err(), "{bad}");
    }
    for r in [Rollout::On, Rollout::Off, Rollout::Percent(7)] {
        let (mode, pct) = r.stored();
        assert_eq!(Rollout::from_stored(mode, pct), Some(r));
    }
}

#[test]
fn percentages_are_stable_per_subject_and_near_the_requested_share() {
    let subjects: Vec<String> = (0..20_000).map(|i| format!("user-{i}")).collect();
    for pct in [1_u8, 10, 25, 50, 90] {
        let on = subjects
            .iter()
            .filter(|s| Rollout::Percent(pct).enabled_for("new_checkout", s))
            .count();
        let share = on as f64 / subjects.len() as f64 * 100.0;
        assert!((share - f64::from(pct)).abs() < 1.5, "{pct}% asked, {share:.2}% on");
    }
    // Stable: the same answer every time; growing a rollout keeps everyone already in.
    for s in &subjects[..500] {
        let at_10 = Rollout::Percent(10).enabled_for("new_checkout", s);
        assert_eq!(at_10, Rollout::Percent(10).enabled_for("new_checkout", s));
        if at_10 {
            assert!(Rollout::Percent(30).enabled_for("new_checkout", s));
        }
    }
    // Independent between flags: the same subjects are not always the ones chosen.
    let a: Vec<bool> = subjects.iter().map(|s| Rollout::Percent(50).enabled_for("a", s)).collect();
    let b: Vec<bool> = subjects.iter().map(|s| Rollout::Percent(50).enabled_for("b", s)).collect();
    let same = a.iter().zip(&b).filter(|(x, y)| x == y).count() as f64 / a.len() as f64;
    assert!((0.45..0.55).contains(&same), "{same}");
    assert!(
        !Rollout::Percent(0).enabled_for("a", "x") && Rollout::Percent(100).enabled_for("a", "x")
    );
}
