"""The access check every request passes, the pages it answers a refusal with, and the
page that lists and signs out the signed-in browsers."""
