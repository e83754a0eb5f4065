// Starts every part of the page; loaded last of static/js (see templates/base.html).
(function () {
  "use strict";

  var A = window.Angelia;

  function init() {
    A.initMenu();
    A.initCopyButtons();
    A.initBadge();
    A.initSidebar();
    A.initNotifyButton();
    A.initShortcuts();
    A.initKeys();
    A.initModeForm();
    A.initModelPicker();
    A.initComposer();
    A.initQueue();
    A.initSteer();
    A.initTranscript();
    A.initAttach();
    A.initRewind();
    A.localiseTimes(document);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
