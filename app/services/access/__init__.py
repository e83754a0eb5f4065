"""Who may come in: browser sign-ins, the single-use links that make them, and how a
browser is named on the page that lists them."""
