// Session.
