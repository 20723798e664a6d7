# frozen_string_literal: true

require "support/browser"

module LeaseMachines
  # test/support/browser.rb itself, on a page of its own: the app is served, Chromium runs its script, the wait sees
  # what the script wrote, and the screenshot is a PNG. The dashboard's browser tests stand on these.
  class BrowserSupportTest < Minitest::Test
    include TestSupport::Browser

    # The span's text is the script's, written after the page has loaded, so the wait can only pass in a browser
    # that ran it (a plain HTTP client sees "loading").
    PAGE = <<~HTML
      <!DOCTYPE html>
      <html>
        <head><meta charset="utf-8"><title>lease_machines browser support</title></head>
        <body>
          <h1>Leases</h1>
          <p>State: <span id="state">loading</span></p>
          <script>
            window.addEventListener("load", () => {
              setTimeout(() => { document.getElementById("state").textContent = "rendered by script"; }, 50);
            });
          </script>
        </body>
      </html>
    HTML
    APP = ->(_env) { [200, { "content-type" => "text/html; charset=utf-8" }, [PAGE]] }

    def test_serves_an_app_to_headless_chromium_and_saves_a_screenshot
      png = File.join(scratch_dir("lease_machines-browser"), "page.png")
      browse(APP) do |driver, url|
        driver.navigate.to(url)
        assert_equal "lease_machines browser support", driver.title
        state = wait_for("the page's script never wrote its text") do
          text = driver.find_element(id: "state").text
          text unless text == "loading"
        end
        assert_equal "rendered by script", state
        assert_equal TestSupport::Browser::WINDOW,
                     driver.execute_script("return [window.outerWidth, window.outerHeight]")
        assert_equal png, save_png(driver, png)
      end
      bytes = File.binread(png)
      assert_operator bytes.bytesize, :>, TestSupport::Browser::PNG_SIGNATURE.bytesize
      assert bytes.start_with?(TestSupport::Browser::PNG_SIGNATURE), "not a PNG: #{bytes[0, 8].inspect}"
    end
  end
end
