// The model picker in the chat header: a choice is applied at once through the JSON API
// (a refusal shows under it and the picker goes back to the model in use), and the
// model_changed and models events keep it in step with the session.
(function () {
  "use strict";

  var A = window.Angelia;

  function parts() {
    var form = document.getElementById("model-form");
    return form
      ? {
          form: form,
          select: form.querySelector("select"),
          hint: document.getElementById("model-hint"),
          error: document.getElementById("model-error"),
        }
      : null;
  }

  function showHint(p) {
    var option = p.select.options[p.select.selectedIndex];
    if (p.hint) {
      p.hint.textContent = option ? option.getAttribute("data-description") || "" : "";
    }
  }

  function showProblem(p, text) {
    if (p.error) {
      p.error.textContent = text;
      p.error.hidden = !text;
    }
  }

  function optionFor(select, id) {
    for (var i = 0; i < select.options.length; i++) {
      if (select.options[i].value === id) {
        return select.options[i];
      }
    }
    return null;
  }

  // Shows ``id`` as the model in use (adding it when the list does not have it).
  function choose(p, id) {
    if (!optionFor(p.select, id)) {
      var option = document.createElement("option");
      option.value = id;
      option.textContent = id;
      p.select.appendChild(option);
    }
    p.select.value = id;
    p.form.setAttribute("data-current", id);
    showHint(p);
  }

  function initModelPicker() {
    var p = parts();
    if (!p || !p.select) {
      return;
    }
    p.select.addEventListener("change", function () {
      var wanted = p.select.value;
      showHint(p);
      if (!wanted) {
        return;
      }
      showProblem(p, "");
      p.form.setAttribute("aria-busy", "true");
      A.apiRequest("POST", p.form.getAttribute("data-api"), { model: wanted })
        .then(
          function (response) {
            if (response.ok) {
              p.form.setAttribute("data-current", wanted);
              return null;
            }
            return A.apiProblem(response, "The model was not switched").then(function (text) {
              showProblem(p, text);
              choose(p, p.form.getAttribute("data-current") || "");
            });
          },
          function () {
            showProblem(p, "The model was not switched: the server did not answer.");
            choose(p, p.form.getAttribute("data-current") || "");
          }
        )
        .then(function () {
          p.form.removeAttribute("aria-busy");
        });
    });
    showHint(p);
  }

  function onModelChanged(data) {
    var el = A.parseFragment(data).querySelector("[data-model]");
    var model = el ? el.getAttribute("data-model") : "";
    if (!model) {
      return;
    }
    var shown = document.getElementById("session-model");
    if (shown) {
      shown.textContent = model;
    }
    var p = parts();
    if (p && p.select) {
      choose(p, model);
      showProblem(p, "");
    }
  }

  // A new list from the backend (its own, with descriptions) replaces the options.
  function onModels(data) {
    var p = parts();
    var spans = A.parseFragment(data).querySelectorAll("[data-models] [data-id]");
    if (!p || !p.select || !spans.length) {
      return;
    }
    var current = p.form.getAttribute("data-current") || p.select.value;
    while (p.select.firstChild) {
      p.select.removeChild(p.select.firstChild);
    }
    for (var i = 0; i < spans.length; i++) {
      var option = document.createElement("option");
      var description = spans[i].getAttribute("data-description") || "";
      option.value = spans[i].getAttribute("data-id");
      option.textContent = spans[i].getAttribute("data-label") || option.value;
      option.setAttribute("data-description", description);
      if (description) {
        option.title = description;
      }
      p.select.appendChild(option);
    }
    if (current) {
      choose(p, current);
    } else {
      showHint(p);
    }
  }

  A.initModelPicker = initModelPicker;
  A.onModelChanged = onModelChanged;
  A.onModels = onModels;
})();
