# frozen_string_literal: true

module LeaseMachines
  class Web
    # The HTML page every screen is rendered into: the title, the navigation, the database the store is on (masked),
    # the screen's own +main+ markup, and the stylesheet and script, each in a tag that carries the response's nonce
    # (the Content-Security-Policy lets nothing else run). No data travels inside the script: it reads the page's
    # data- attributes.
    module Layout
      NAVIGATION = { "/" => "Resources", "/audit" => "Audit", "/metrics" => "Metrics" }.freeze

      # The page: +title+ (text, escaped here), +database+ (Store#path), +main+ (markup).
      def self.render(view, title:, database:, main:)
        v = view
        <<~HTML
          <!DOCTYPE html>
          <html lang="en">
          <head>
          <meta charset="utf-8">
          <meta name="viewport" content="width=device-width, initial-scale=1">
          <title>#{v.h(title)} · lease_machines</title>
          <style nonce="#{v.h(v.nonce)}">#{Assets::STYLE}</style>
          </head>
          <body>
          <header>
          <nav>#{NAVIGATION.map { |path, label| v.tag("a", { href: v.url(path) }, label) }.join(" ")}</nav>
          <p class="database">Database: <code>#{v.masked(database)}</code>#{v.actions ? "" : " · read-only"}</p>
          </header>
          <main>
          #{main}
          </main>
          <script nonce="#{v.h(v.nonce)}">#{Assets::SCRIPT}</script>
          </body>
          </html>
        HTML
      end
    end
  end
end
