//! Terminal input to [`Msg`].

use crossterm::event::{
    Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseButton, MouseEventKind,
};

use crate::app::{Msg, Prompt, Tab};

/// Maps one terminal event; `prompt` says a text prompt is open (keys are
/// then text). `None`: the event means nothing.
pub fn map_event(ev: &Event, prompt: bool) -> Option<Msg> {
    match ev {
        Event::Key(k) if k.kind != KeyEventKind::Release => map_key(k, prompt),
        Event::Mouse(m) => match m.kind {
            MouseEventKind::ScrollDown => Some(Msg::Down(3)),
            MouseEventKind::ScrollUp => Some(Msg::Up(3)),
            MouseEventKind::Down(MouseButton::Left) if !prompt => Some(Msg::Click(m.column, m.row)),
            _ => None,
        },
        Event::Resize(w, h) => Some(Msg::Resize(*w, *h)),
        _ => None,
    }
}

/// Maps one key.
pub fn map_key(k: &KeyEvent, prompt: bool) -> Option<Msg> {
    let ctrl = k.modifiers.contains(KeyModifiers::CONTROL);
    if ctrl && k.code == KeyCode::Char('c') {
        return Some(Msg::Quit);
    }
    if prompt {
        return match k.code {
            KeyCode::Char(c) if !ctrl => Some(Msg::Char(c)),
            KeyCode::Backspace => Some(Msg::Backspace),
            KeyCode::Enter => Some(Msg::Submit),
            KeyCode::Esc => Some(Msg::Cancel),
            _ => None,
        };
    }
    if ctrl {
        return match k.code {
            KeyCode::Char('d') => Some(Msg::HalfDown),
            KeyCode::Char('u') => Some(Msg::HalfUp),
            KeyCode::Char('f') => Some(Msg::PageDown),
            KeyCode::Char('b') => Some(Msg::PageUp),
            KeyCode::Char('n') => Some(Msg::Down(1)),
            KeyCode::Char('p') => Some(Msg::Up(1)),
            _ => None,
        };
    }
    Some(match k.code {
        KeyCode::Char('q') => Msg::Quit,
        KeyCode::Char('j') | KeyCode::Down => Msg::Down(1),
        KeyCode::Char('k') | KeyCode::Up => Msg::Up(1),
        KeyCode::PageDown | KeyCode::Char(' ') => Msg::PageDown,
        KeyCode::PageUp => Msg::PageUp,
        KeyCode::Char('g') | KeyCode::Home => Msg::Top,
        KeyCode::Char('G') | KeyCode::End => Msg::Bottom,
        KeyCode::Tab | KeyCode::BackTab => Msg::NextTab,
        KeyCode::Char('1') => Msg::ShowTab(Tab::Groups),
        KeyCode::Char('2') => Msg::ShowTab(Tab::Events),
        KeyCode::Char('3') => Msg::ShowTab(Tab::Tree),
        KeyCode::Char('i') => Msg::ToggleInternal,
        KeyCode::Char('b') => Msg::ToggleDirection,
        KeyCode::Char('E') => Msg::ExpandAll,
        KeyCode::Enter => Msg::Enter,
        KeyCode::Esc => Msg::Back,
        KeyCode::Char('l') | KeyCode::Right => Msg::FocusDetail,
        KeyCode::Char('h') | KeyCode::Left => Msg::FocusList,
        KeyCode::Char('s') => Msg::NextSort,
        KeyCode::Char('S') => Msg::ReverseSort,
        KeyCode::Char('?') => Msg::ToggleHelp,
        KeyCode::Char('/') => Msg::StartPrompt(Prompt::Search),
        KeyCode::Char('n') => Msg::SearchNext,
        KeyCode::Char('N') => Msg::SearchPrev,
        KeyCode::Char('p') => Msg::StartPrompt(Prompt::Pid),
        KeyCode::Char('c') => Msg::StartPrompt(Prompt::Comm),
        KeyCode::Char('e') => Msg::StartPrompt(Prompt::Event),
        KeyCode::Char('x') => Msg::ClearFilters,
        _ => return None,
    })
}
