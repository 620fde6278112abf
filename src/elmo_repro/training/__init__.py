"""The one trainer every task run goes through (:mod:`.trainer`)."""
