//! The statement contract on this dialect: every statement's text uses exactly the parameters
//! its slot declares, `$1` … `$N`, so no binding can shift a value into the wrong column.

use jadpo_store_sqlite::DIALECT;

#[test]
fn every_statement_uses_exactly_the_parameters_its_slot_declares() {
    match jadpo_store_sql::check_dialect(&DIALECT) {
        // Every role's table is read: a slot list that lost a table would pass vacuously.
        Ok(slots) => assert!(slots >= 100, "only {slots} slots read"),
        Err(wrong) => {
            panic!("statements that break their slot's declaration:\n{}", wrong.join("\n"))
        }
    }
}
