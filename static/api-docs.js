// Starts the vendored Swagger UI on /docs (a file, not an inline script, for the CSP).
window.addEventListener("DOMContentLoaded", function () {
  window.SwaggerUIBundle({
    url: "/openapi.json",
    dom_id: "#swagger-ui",
    deepLinking: true,
  });
});
