// The page's own shortcuts beyond a card's Enter and Escape (cards.js) and the message
// box's keys (composer.js): Ctrl+. stops the agent's turn and Alt+Shift+J goes to the
// oldest request waiting for an answer, from anywhere on the page. Both take a modifier
// so that neither is pressed by accident (Escape alone closes lists and menus), and
// neither is a browser's or a screen reader's own key. docs/user-guide.md lists them.
(function () {
  "use strict";

  var A = window.Angelia;

  // By the key's place as well as its character: Ctrl changes what some layouts report.
  function isStopKey(evt) {
    return (
      evt.ctrlKey && !evt.altKey && !evt.metaKey && !evt.shiftKey &&
      (evt.key === "." || evt.code === "Period")
    );
  }

  // By the key's place: with Alt held a Mac reports the character Option makes.
  function isJumpKey(evt) {
    return evt.altKey && evt.shiftKey && !evt.ctrlKey && !evt.metaKey && evt.code === "KeyJ";
  }

  function initKeys() {
    document.addEventListener("keydown", function (evt) {
      if (evt.defaultPrevented || evt.isComposing) {
        return;
      }
      if (isStopKey(evt)) {
        if (A.interruptTurn()) {
          evt.preventDefault();
        }
      } else if (isJumpKey(evt)) {
        // With nothing waiting the key is left to the page (a Mac types a character).
        if (A.goToOldestCard()) {
          evt.preventDefault();
        }
      }
    });
  }

  A.initKeys = initKeys;
})();
